"""Short tracebacks for lessons: the pruning on a real traceback, and the handler in a real kernel (nbclient), where
the cell must still fail as before — nbval's raises-exception cells, Run All stopping, %debug's full traceback."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from gpulab.notebook.tracebacks import is_library_file, lesson_frames
from gpulab.ranks import RankFailed

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_twice(text: str) -> object:
    return json.loads(json.loads(text))  # the learner's line: the error is raised inside the json package


def test_library_frames_between_the_learners_line_and_the_raise_are_left_out():
    with pytest.raises(json.JSONDecodeError) as info:
        parse_twice('"{not json"')
    tb = info.value.__traceback__
    short, hidden, packages = lesson_frames(tb)
    names = []
    while short is not None:
        names.append(short.tb_frame.f_code.co_name)
        short = short.tb_next
    assert names[:2] == ["test_library_frames_between_the_learners_line_and_the_raise_are_left_out", "parse_twice"]
    assert names[-1] == "raw_decode" and len(names) == 3  # json's own frames hidden, the raising one kept
    assert hidden >= 2 and packages == ["Python's library"]
    full = 0
    while tb is not None:  # the original is untouched
        full, tb = full + 1, tb.tb_next
    assert full == len(names) + hidden


def test_an_error_told_in_its_message_ends_at_the_learners_line():
    with pytest.raises(json.JSONDecodeError) as info:
        parse_twice('"{not json"')
    short, hidden, _ = lesson_frames(info.value.__traceback__, keep_raise=False)
    names = []
    while short is not None:
        names.append(short.tb_frame.f_code.co_name)
        short = short.tb_next
    assert names == ["test_an_error_told_in_its_message_ends_at_the_learners_line", "parse_twice"] and hidden >= 3
    assert RankFailed.told_in_its_message  # the launcher's error: its message holds the rank's own traceback


def test_with_no_frame_of_the_learners_the_raise_is_kept():
    with pytest.raises(json.JSONDecodeError) as info:
        json.loads("{")
    tb = info.value.__traceback__.tb_next  # from json's frames on: none is the learner's
    short, _, _ = lesson_frames(tb, keep_raise=False)
    assert short is not None and short.tb_next is None and short.tb_frame.f_code.co_name == "raw_decode"


def test_what_counts_as_the_learners_code():
    assert is_library_file(json.__file__) and is_library_file(pytest.__file__)
    assert is_library_file(lesson_frames.__code__.co_filename)  # gpulab's own frames are plumbing too
    assert not is_library_file(__file__) and not is_library_file("/tmp/ipykernel_1234/2810492512.py")


def _errors(cell) -> str:
    return "\n".join(ANSI.sub("", "\n".join(o.traceback)) for o in cell.outputs if o.output_type == "error")


@pytest.mark.timeout(600)
def test_in_a_kernel_the_cell_still_fails_with_a_short_traceback():
    nb = nbformat.v4.new_notebook()
    crash = "model = torch.nn.Sequential(torch.nn.Linear(64, 8), torch.nn.ReLU())\nmodel(torch.ones(2, 3))"
    tag = {"tags": ["raises-exception"]}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext gpulab\nimport sys, torch"),
        nbformat.v4.new_code_cell(crash, metadata=tag),
        nbformat.v4.new_code_cell(
            "depth, tb = 0, sys.last_traceback\nwhile tb is not None:\n"
            "    depth, tb = depth + 1, tb.tb_next\nprint('frames kept for %debug:', depth)"
        ),
        nbformat.v4.new_code_cell("print(get_ipython().custom_exceptions)"),
        nbformat.v4.new_code_cell("%xmode Verbose\n" + crash, metadata=tag),
        nbformat.v4.new_code_cell("%xmode Context\n1 / 0"),
    ]  # not tagged: Run All must stop here
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        NotebookClient(nb, kernel_name="python3", timeout=300).execute()
    short, verbose = _errors(nb.cells[1]), _errors(nb.cells[4])
    assert "hidden between your code and the line that raised; %xmode Verbose shows every frame" in short
    assert "Cell In[2], line 2" in short and "----> 2 model(torch.ones(2, 3))" in short
    assert "return F.linear(input, self.weight, self.bias)" in short  # where it was raised
    assert short.rstrip().endswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 64x8)")
    assert "_call_impl" not in short and len(short.splitlines()) <= 16
    assert (
        "_call_impl" in verbose and "hidden" not in verbose and len(verbose.splitlines()) > 3 * len(short.splitlines())
    )
    depth = int(nb.cells[2].outputs[0].text.split(":")[1])
    assert depth >= 7  # the whole traceback is still there for %debug
    assert nb.cells[3].outputs[0].text.strip() == "(<class 'Exception'>,)"  # KeyboardInterrupt is IPython's own
    assert "ZeroDivisionError" in _errors(nb.cells[5])

"""Chapter 08's exercise, for real: a resumable DDP script run under torchrun with 2 gloo ranks and one restart, a
rank killed by the runner once the snapshot exists, checked by ``gpulab.check``.

The chapter's script (the solution) passes; each wrong answer (resume_wrong.py: the solution with one piece taken out)
fails with a message that names that piece, and leaves no process behind; the exercise's starting script, which trains
without a snapshot, is told so.
"""

from __future__ import annotations

import pytest

import gpulab
from gpulab.exercises.ch08_resume import check_resume_script
from gpulab.exercises.feedback import Hint, NotAnswered, WrongType

from .resume_wrong import SOLUTION, WRONG, write_wrong
from .test_ddp_script import _processes_running

STARTING_POINT = SOLUTION.with_name("digits_ddp_restart.py")


def test_the_chapters_script_passes():
    feedback = gpulab.check("ch08-ex1", str(SOLUTION))
    assert feedback.passed, str(feedback)
    assert "rank 0 alone wrote the snapshot" in feedback.message and "went on at epoch 1" in feedback.message


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_script_fails_with_the_piece_it_lacks(name, tmp_path):
    _, words = WRONG[name]
    script = write_wrong(name, tmp_path)
    with pytest.raises(Hint) as failed:
        check_resume_script(script)
    assert type(failed.value) is Hint
    for word in words:
        assert word in failed.value.message, (word, failed.value.message)
    assert _processes_running(str(tmp_path)) == [], "a rank of the wrong script outlived the check"


def test_the_starting_point_is_told_it_writes_no_snapshot():
    feedback = gpulab.check("ch08-ex1", str(STARTING_POINT))
    assert feedback.verdict == "not yet" and "no rank wrote a snapshot" in feedback.message
    assert "section 2" in str(feedback)


def test_an_answer_that_is_not_a_path_or_names_no_file_is_told_so():
    with pytest.raises(WrongType, match="path of your script"):
        check_resume_script(42)
    with pytest.raises(NotAnswered, match="there is no file 'nowhere.py'"):
        check_resume_script("nowhere.py")
    assert gpulab.check("ch08-ex1", ...).verdict == "not answered yet"

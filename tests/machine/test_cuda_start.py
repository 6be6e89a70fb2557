"""The record of the first CUDA start: in fresh interpreters (a CUDA start cannot be undone in this one), whether
gpulab or torch is imported first; PyTorch's own functions are back afterwards; the messages that quote it."""

from __future__ import annotations

import sys
import textwrap

from gpulab.machine.cuda import CudaState
from gpulab.machine.cuda_start import CodeLine, CudaStart
from tests import process_group


def _script(tmp_path, code: str) -> list[str]:
    path = tmp_path / "learner.py"
    path.write_text(textwrap.dedent(code))
    out = process_group.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_gpulab_first_then_a_tensor_moved_to_cuda_is_named_with_its_line(tmp_path):
    lines = _script(
        tmp_path,
        """\
        import sys
        import gpulab
        assert "torch" not in sys.modules  # the hook waits for torch.cuda's import
        print("recorder loaded:", "gpulab.machine.cuda_start" in sys.modules)
        import torch
        print("recorder loaded:", "gpulab.machine.cuda_start" in sys.modules)
        from gpulab.machine.cuda_start import cuda_started_by
        print("before:", cuda_started_by())
        def make():
            return torch.ones(2).cuda()
        try:
            make()
        except (RuntimeError, AssertionError) as exc:
            print("raised:", type(exc).__name__)
        rec = cuda_started_by()
        print("record:", rec)
        print("line:", rec.line.lineno, rec.line.function, rec.call)
        print("unhooked:", torch.cuda._lazy_init.__module__, torch.cuda.memory._lazy_init is torch.cuda._lazy_init,
              torch.cuda.is_available.__name__, type(torch.cuda.__loader__).__name__)
        print("finder gone:", not any(type(f).__name__ == "_WhenTorchCudaImported" for f in sys.meta_path))
        try:
            torch.cuda.init()
        except (RuntimeError, AssertionError):
            pass
        print("still first:", cuda_started_by() is rec)
    """,
    )
    assert lines[:3] == ["recorder loaded: False", "recorder loaded: True", "before: None"]
    record = next(line for line in lines if line.startswith("record:"))
    assert "learner.py, line 10: `return torch.ones(2).cuda()`" in record and "torch.cuda._lazy_init" in record
    if "raised:" in "\n".join(lines):  # a machine without a GPU: the attempt and why it failed
        assert "on this machine it failed:" in record
    assert "line: 10 make torch.cuda._lazy_init" in lines
    assert "unhooked: torch.cuda True is_available SourceFileLoader" in lines
    assert "finder gone: True" in lines and "still first: True" in lines


def test_torch_first_then_is_available_is_named(tmp_path):
    lines = _script(
        tmp_path,
        """\
        import torch
        import gpulab
        from gpulab.machine.cuda_start import cuda_started_by
        ok = torch.cuda.is_available()
        print(cuda_started_by())
        print(gpulab.cuda_state())
    """,
    )
    assert lines[0].startswith("CUDA was") and "learner.py, line 4: `ok = torch.cuda.is_available()`" in lines[0]
    assert "(through torch.cuda.is_available())" in lines[0]
    assert lines[1].endswith(lines[0])  # cuda_state() quotes it


def test_without_a_learners_frame_the_innermost_outside_torch_is_named():
    stack = (
        CodeLine("/usr/lib/python3/site-packages/lightning/x.py", 3, "f", "torch.cuda.init()"),
        CodeLine("/usr/lib/python3/site-packages/torch/cuda/__init__.py", 9, "init", "_lazy_init()"),
    )
    start = CudaStart("torch.cuda._lazy_init", None, stack)
    assert str(start) == (
        "CUDA was started by x.py, line 3: `torch.cuda.init()` (library code) (through torch.cuda._lazy_init)."
    )


def test_the_guarded_setters_reason_quotes_the_line():
    line = CodeLine("/tmp/ipykernel_1/123.py", 3, "<module>", "x = torch.ones(2).cuda()")
    state = CudaState(True, True, started_by=CudaStart("torch.cuda._lazy_init", line, (line,)))
    assert str(state).startswith("CUDA is initialised in this process")
    assert str(state).endswith(
        "CUDA was started by 123.py, line 3: `x = torch.ones(2).cuda()` (through torch.cuda._lazy_init)."
    )

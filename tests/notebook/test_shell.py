"""The shell demo of chapter 02: real bash in a fresh process, echoing each line."""

from __future__ import annotations

from gpulab.notebook.shell import run_shell


def test_run_shell_shows_what_a_started_program_inherits(tmp_path):
    (tmp_path / "train.py").write_text("import os\nprint('sees', os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)'))\n")
    (tmp_path / "run.sh").write_text("export CUDA_VISIBLE_DEVICES=4\npython train.py\n")
    run = run_shell(
        "CUDA_VISIBLE_DEVICES=1; python train.py\nCUDA_VISIBLE_DEVICES=3 sh run.sh\n"
        "export CUDA_VISIBLE_DEVICES=4 && CUDA_VISIBLE_DEVICES=5 python train.py\npython train.py",
        cwd=tmp_path,
        env={"GPULAB_X": "1"},
    )
    assert [line for line in str(run).splitlines() if line.startswith("sees")] == [
        "sees (unset)",
        "sees 4",
        "sees 5",
        "sees 4",
    ]
    assert run.returncode == 0 and "<pre>" in run._repr_html_()
    assert "(exit status 3)" in str(run_shell("exit 3"))

"""The output relay, on log files this test writes as a rank would (bytes, partial lines, progress bars)."""

from __future__ import annotations

import io

from gpulab.ranks.rank_output import OutputRelay, RankLogs


def relay_over(tmp_path, world_size=2):
    logs = RankLogs(str(tmp_path))
    files = logs.files(world_size)
    logs.reify({r: {} for r in range(world_size)})  # makes the folders, as elastic does before starting ranks
    out, err = io.StringIO(), io.StringIO()
    return OutputRelay(files, out, err), files, out, err


def write(path, data: bytes):
    with open(path, "ab") as f:
        f.write(data)


def test_whole_lines_are_copied_labelled_with_the_rank_and_stream(tmp_path):
    relay, files, out, err = relay_over(tmp_path)
    write(files[0][0], b"epoch 1\nepo")
    write(files[1][1], "warn \u00e9\n".encode())
    assert relay.pump() == 2
    assert out.getvalue() == "[rank 0] epoch 1\n" and err.getvalue() == "[rank 1] warn \u00e9\n"
    write(files[0][0], b"ch 2\n")
    relay.pump()
    assert out.getvalue().splitlines() == ["[rank 0] epoch 1", "[rank 0] epoch 2"]


def test_finish_copies_a_last_line_without_newline_and_nothing_twice(tmp_path):
    relay, files, out, _ = relay_over(tmp_path)
    write(files[1][0], b"done")
    assert relay.pump() == 0 and out.getvalue() == ""
    relay.finish()
    relay.finish()
    assert out.getvalue() == "[rank 1] done\n" and relay.lines_copied == 0


def test_a_progress_bar_shows_its_last_state_and_bad_bytes_do_not_break_it(tmp_path):
    relay, files, _, err = relay_over(tmp_path, 1)
    write(files[0][1], b" 10%\r 50%\r100%\r\n\xff\xfe bytes\n")
    relay.pump()
    assert err.getvalue().splitlines() == ["[rank 0] 100%", "[rank 0] \ufffd\ufffd bytes"]
    assert relay.recent_lines(0) == ["100%", "\ufffd\ufffd bytes"] and relay.recent_lines(0, stderr=False) == []


def test_files_not_written_yet_are_waited_for(tmp_path):
    out = io.StringIO()
    relay = OutputRelay({0: (str(tmp_path / "nope.log"), str(tmp_path / "nope2.log"))}, out, io.StringIO())
    assert relay.pump() == 0


def test_the_logs_spec_tells_elastic_fixed_paths_and_the_error_file_variable(tmp_path):
    logs = RankLogs(str(tmp_path))
    envs = {0: {}, 1: {}}
    dest = logs.reify(envs)
    assert dest.stdouts[1] == str(tmp_path / "1" / "stdout.log") and dest.stderrs[0] == str(
        tmp_path / "0" / "stderr.log"
    )
    assert envs[1]["TORCHELASTIC_ERROR_FILE"] == dest.error_files[1] == str(tmp_path / "1" / "error.json")
    assert logs.root_log_dir == str(tmp_path) and (tmp_path / "1").is_dir()

"""How `tslog groups reset-offsets` reads its command line: relative times such as -3d are
values, not options; exactly one target; --execute and --dry-run exclude each other."""

from __future__ import annotations

import pytest

from tslog.client.cli import _attach_time_values, _build_parser, main
from tslog.client.cli_groups import GroupsCommandError, _duration_time


def parse(*argv: str):
    return _build_parser().parse_args(_attach_time_values(list(argv)))


def test_relative_times_and_negative_shifts_are_values():
    args = parse("groups", "reset-offsets", "g", "--topic", "t", "--by-duration", "-3d")
    assert (args.by_duration, args.execute, args.dry_run) == ("-3d", False, False)
    args = parse("groups", "reset-offsets", "g", "--topic", "t", "--to-datetime", "-15m",
                 "--execute")
    assert (args.to_datetime, args.execute) == ("-15m", True)
    args = parse("groups", "reset-offsets", "g", "--topic", "t", "--shift-by", "-2",
                 "--dry-run")
    assert (args.shift_by, args.dry_run) == (-2, True)


@pytest.mark.parametrize("argv", [
    ["groups", "reset-offsets", "g", "--topic", "t"],  # no target
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--execute",
     "--dry-run"],
    ["groups", "reset-offsets", "g", "--to-earliest"],  # no topic
])
def test_bad_command_lines_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


def test_a_duration_means_that_long_ago():
    assert _duration_time("-3d") == "-3d"
    assert _duration_time("2h") == "-2h"
    with pytest.raises(GroupsCommandError, match="back in time"):
        _duration_time("+1h")

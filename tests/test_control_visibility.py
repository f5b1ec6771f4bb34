"""The pure side of "cannot see" and of the port's owner (issue 17): what a search's output says when the
server's processes belong to another uid, and which process is the server when a foreign one holds the port."""

from __future__ import annotations

from tui.sources.control_cmds import hidden_owner, in_tree, parse_find, pick_main

# A search as a non-root user (uid 1001): root's listener on the port, root's log, no process readable.
HIDDEN = "U 0 31672\nW 0\nM 1001\n"


def test_another_uids_listener_with_no_readable_holder_is_hidden() -> None:
    found = parse_find(HIDDEN)
    assert found.listeners == ((0, 31672),) and found.log_uid == 0 and found.my_uid == 1001
    assert hidden_owner(found) == (True, 0)


def test_another_uids_log_alone_is_hidden() -> None:
    assert hidden_owner(parse_find("W 0\nM 1001\n")) == (True, 0)


def test_root_and_own_files_are_never_hidden() -> None:
    assert hidden_owner(parse_find("U 1001 5\nW 1001\nM 0\n")) == (False, None)  # root reads every /proc
    assert hidden_owner(parse_find("W 1001\nM 1001\n")) == (False, None)  # our own log, nobody writes it: gone
    assert hidden_owner(parse_find("M 1001\n")) == (False, None)  # nothing at all: not found


def test_a_listener_we_can_read_is_not_hidden() -> None:
    text = "port 40\nS 40 S 1 40 40 100\nC 40 python -m http.server\nU 0 7\nM 1001\n"
    found = parse_find(text)
    assert hidden_owner(found) == (False, None) and found.names == {40: "python -m http.server"}


def test_the_log_writer_wins_over_a_foreign_listener() -> None:
    """A foreign service on the port (not writing the log) is not the server: the log's writer is."""
    text = "port 40\nlog 50\nlog 51\nS 40 S 1 40 40 100\nS 50 S 1 50 50 200\nS 51 S 50 50 50 210\n"
    found = parse_find(text)
    main = pick_main(found)
    assert main is not None and main.pid == 50
    assert not in_tree(found.procs[40], main, found.procs) and in_tree(found.procs[51], main, found.procs)


def test_the_listener_that_writes_the_log_is_the_server() -> None:
    text = "port 50\nlog 50\nlog 51\nS 50 S 1 50 50 200\nS 51 S 50 50 50 210\n"
    main = pick_main(parse_find(text))
    assert main is not None and main.pid == 50

"""The words of a first contact (tui/sources/hostkeys.py), pure: where a name resolves to, the name its key is filed
under in known_hosts, and the command that adds exactly the key shown. The real sshd cases are in
tests/test_ssh_first_contact.py."""

from __future__ import annotations

import shlex
from pathlib import Path

import asyncssh

from tui.sources.hostkeys import KeyTarget, changed_key_message, listed_files, unknown_key_message


def test_where_and_the_known_hosts_name() -> None:
    alias = KeyTarget("gpu1", "127.0.0.1", 2299, None, ("/k",))
    assert alias.where == "gpu1 (127.0.0.1:2299)" and alias.known_name == "[127.0.0.1]:2299"
    plain = KeyTarget("10.0.0.5", "10.0.0.5", 22, None, ("/k",))
    assert plain.where == "10.0.0.5:22" and plain.known_name == "10.0.0.5"
    v6 = KeyTarget("gpu6", "::1", 2299, None, ("/k",))
    assert v6.where == "gpu6 ([::1]:2299)" and v6.known_name == "[::1]:2299"
    # HostKeyAlias: the key is filed under the alias alone (ssh's way; asyncssh also tries the name without a port)
    assert KeyTarget("gpu1", "127.0.0.1", 2299, "gpu-pool", ("/k",)).known_name == "gpu-pool"


def test_listed_files_expand_home(monkeypatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    assert listed_files("~/.ssh/kh") == ("/home/me/.ssh/kh",)
    assert listed_files(["~/a", "/b"]) == ("/home/me/a", "/b")
    assert listed_files(None) == () and listed_files(()) == ()


def test_the_command_adds_exactly_the_key_shown_and_makes_its_folder(tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()
    file = tmp_path / "new" / "known_hosts"
    target = KeyTarget("gpu1", "127.0.0.1", 2299, None, (str(file),), missing=(str(file),))
    message = unknown_key_message(target, key)
    fingerprint = key.get_fingerprint("sha256")
    assert message.startswith(f"unknown host key for gpu1 (127.0.0.1:2299): ED25519 key fingerprint is {fingerprint}")
    assert f"{file} does not exist yet" in message and "ssh_host_ed25519_key.pub" in message
    command = message.split("trust it with: ", 1)[1]
    words = shlex.split(command)
    line = key.export_public_key("openssh").decode().split()[:2]
    assert words[:5] == ["mkdir", "-p", "-m", "700", str(file.parent)]
    assert words[5:] == ["&&", "echo", " ".join(["[127.0.0.1]:2299", *line]), ">>", str(file)]


def test_a_key_that_could_not_be_fetched_offers_keyscan_of_the_resolved_host() -> None:
    target = KeyTarget("gpu1", "127.0.0.1", 2299, None, ("/k",))
    message = unknown_key_message(target, None, "connection reset")
    assert "could not be fetched (connection reset)" in message and "`ssh-keyscan -p 2299 127.0.0.1`" in message
    assert "if it matches" not in message  # no fingerprint was shown: nothing to match


def test_a_changed_key_names_the_file_that_holds_the_old_one() -> None:
    key = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()
    message = changed_key_message(KeyTarget("gpu1", "127.0.0.1", 2299, None, ("/a", "/b")), "/b", key)
    assert message.startswith("HOST KEY CHANGED for gpu1 (127.0.0.1:2299): the server now presents ED25519 key")
    assert message.endswith("ssh-keygen -R '[127.0.0.1]:2299' -f /b")

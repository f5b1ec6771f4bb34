import subprocess


def test_real_sshd_runs_a_command_with_strict_host_key(sshd):
    out = subprocess.run(
        [
            "ssh",
            "-F",
            str(sshd.ssh_config),
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "testhost",
            "echo",
            "hello-from-sshd",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello-from-sshd"

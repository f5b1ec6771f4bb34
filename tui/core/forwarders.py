"""Transparent forwarders: processes that listen on a port only to relay its connections to a server elsewhere.

docker-proxy (`docker run -p`), podman's rootlessport, socat, an `ssh -L` client (or sshd for `ssh -R`),
`kubectl port-forward`: when one of them holds the server's port, the port's listener is not the server, and
not a foreign server either. Whose /health 200 it relays is then decided by the identity probe and the log
(tui.core.answerer), never by the listener; and the tool never adopts, nor signals, a forwarder as the server.
Pure: a command line in, a name out.
"""

from __future__ import annotations

# argv[0]'s basename → the name said ("behind docker-proxy (pid N)"). TCP relays and reverse proxies only:
# a web server of its own (nginx serving files) is still told apart by the identity probe.
FORWARDERS = {
    "docker-proxy": "docker-proxy",
    "rootlessport": "rootlessport",
    "rootlesskit": "rootlesskit",
    "slirp4netns": "slirp4netns",
    "pasta": "pasta",
    "pasta.avx2": "pasta",
    "socat": "socat",
    "ssh": "ssh",
    "sshd": "sshd",
    "kubectl": "kubectl",
    "rinetd": "rinetd",
    "redir": "redir",
    "haproxy": "haproxy",
}


def forwarder(command: str) -> str:
    """The forwarder's name when `command` (a process's command line, arguments joined by spaces) is a known
    transparent forwarder, else "". sshd's children title themselves `sshd: user@notty`."""
    words = command.split()
    if not words:
        return ""
    first = words[0].rsplit("/", 1)[-1].rstrip(":")
    return FORWARDERS.get(first, "")

"""A taken HTTP port stops `serve` before anything is spawned: exit 2 naming the setting and the port,
also when the holder is another server whose fronts bind with SO_REUSEPORT."""

import socket

import pytest
from serve_command import run_serve


@pytest.mark.parametrize("reuse_port", [False, True])
def test_serve_refuses_a_port_another_socket_listens_on(tmp_path, reuse_port):
    with socket.socket() as holder:
        if reuse_port:  # what a running roleserve's fronts do
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(f"http:\n  host: 127.0.0.1\n  port: {port}\n")
        result = run_serve("--config", str(cfg), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{cfg}:3:9: http.port: 127.0.0.1:{port} is not free" in result.stderr
    assert "roleserve ready" not in result.stdout and "loading" not in result.stderr

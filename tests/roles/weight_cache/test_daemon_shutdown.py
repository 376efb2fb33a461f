"""A daemon terminated the way the launcher stops its children (SIGTERM, maybe before it read Shutdown)
unlinks its segments itself: no "resource_tracker ... leaked shared_memory objects" warning, nothing left.

multiprocessing's resource tracker is shared by the process that spawns the daemon; it reports (and
unlinks) any segment a dead process registered and did not unlink, when that process tree ends. So the
parent here is a separate Python whose stderr, the tracker's too, the test reads whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.tiny_checkpoint import write_tiny_llama

PARENT = textwrap.dedent(
    """
    import multiprocessing, sys
    import zmq
    from roles.shared_weights.asking import ask
    from roles.shared_weights.identity import identity_of
    from roles.shared_weights.messages import WeightAnswer, WeightQuery
    from roles.shared_weights.segment import segment_exists


    def daemon(address, prefix):
        from roles.shared_weights.daemon import SharedWeightsDaemon, bind_router, run
        from roles.shared_weights.store import WeightStore

        run(SharedWeightsDaemon(bind_router(zmq.Context.instance(), address), WeightStore(prefix)))


    if __name__ == "__main__":
        address, prefix, model = sys.argv[1:]
        process = multiprocessing.get_context("spawn").Process(target=daemon, args=(address, prefix))
        process.start()
        answer = ask(zmq.Context.instance(), address, WeightQuery(identity_of(model, "exact")), timeout_s=120)
        assert isinstance(answer, WeightAnswer) and answer.error is None, answer
        process.terminate()
        process.join(60)
        print(f"exit code {process.exitcode}; segment left: {segment_exists(answer.segment)}")
    """
)


def test_a_terminated_daemon_unlinks_its_segment_without_a_leak_warning(tmp_path):
    model = write_tiny_llama(tmp_path / "tiny")
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    result = subprocess.run(
        [sys.executable, str(script), f"ipc://{tmp_path}/wc.sock", "roleserve-test-term-", str(model)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "exit code 0; segment left: False" in result.stdout, result.stdout + result.stderr
    assert "leaked shared_memory" not in result.stderr, result.stderr

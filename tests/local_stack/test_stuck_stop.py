"""A stop of `smq local up` that never ends does not hang the shell: once it has taken longer than
the jobs' stop grace and a margin, every thread's stack goes to stderr and the process exits 1."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

STUCK_STOP = textwrap.dedent(
    """
    import threading, time
    from smq.local import cli

    cli._stop_on_signals(stuck_after=1)
    try:
        print("up", flush=True)
        threading.Event().wait()
    except cli._StopRequested:
        time.sleep(120)  # a stop that never ends
    """
)


@pytest.mark.timeout(60)
def test_a_stuck_stop_prints_every_threads_stack_and_exits_1() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK_STOP], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "up\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()

    assert process.returncode == 1
    assert err.startswith("Timeout (0:00:01)!"), err
    assert "most recent call first" in err and 'File "<string>", line 10' in err, "where the stop is stuck"

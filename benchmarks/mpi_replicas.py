"""One rank of the benchmark suite's MPI job (see `benchmarks/workloads/_mpi.py`):

    python -m mytorch.distributed.launch -n 2 benchmarks/mpi_replicas.py SOCKET

Each rank initializes mytorch.distributed, connects to the harness's Unix socket SOCKET,
says `ready <rank>` and then answers commands, one line each, with `ok [value]` or
`error <message>`:

    setup TASK JSON   build TASK (a name in TASKS) with keyword arguments JSON on every
                      rank; answers the name later commands use
    run NAME          run it once
    save NAME PATH    rank 0 writes its last result to PATH (.npz, arrays a0, a1, ...)
    quit              leave

Between commands the rank blocks reading the socket, so an idle job takes no CPU time
while the harness times its in-process contenders.
"""

import json
import os
import socket
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402 -- after the thread settings

import mytorch as mt  # noqa: E402
import mytorch.distributed as dist  # noqa: E402


def _w10(size):
    from benchmarks.workloads.w10_data_parallel import pmap_step

    return pmap_step(size, mt.devices())


def _w11(size, bucket_bytes):
    from benchmarks.workloads.w11_grad_bucketing import pmap_step

    return pmap_step(size, mt.devices(), bucket_bytes)


# each builds a zero-argument callable returning a list of arrays (the same on every rank)
TASKS = {"w10": _w10, "w11": _w11}


def serve(stream):
    """Answer the harness's commands until `quit`."""
    tasks, results = {}, {}
    for line in stream:
        words = line.split(maxsplit=2)
        try:
            if words[0] == "quit":
                return
            if words[0] == "setup":
                name = f"{words[1]}-{len(tasks)}"
                tasks[name] = TASKS[words[1]](**json.loads(words[2]))
                answer = name
            elif words[0] == "run":
                results[words[1]] = tasks[words[1]]()
                answer = ""
            elif words[0] == "save":
                name, path = words[1], words[2].strip()
                if mt.process_index() == 0:
                    arrays = [np.asarray(a) for a in results[name]]
                    np.savez(path, **{f"a{i}": a for i, a in enumerate(arrays)})
                answer = ""
            else:
                raise ValueError(f"unknown command {words[0]!r}")
            stream.write(f"ok {answer}\n")
        except Exception as e:  # noqa: BLE001 -- reported to the harness, which shows it
            stream.write(f"error {type(e).__name__}: {e}".splitlines()[0] + "\n")
        stream.flush()


def main(path):
    """Connect to the harness at `path` and serve it."""
    dist.initialize()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    stream = conn.makefile("rw", buffering=1)
    stream.write(f"ready {mt.process_index()}\n")
    stream.flush()
    serve(stream)
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1])

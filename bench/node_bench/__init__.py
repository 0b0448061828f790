"""bench_node.py's code by concern (bench_node.py keeps the options, main and the run loop, and dispatches
the child processes' command lines to :mod:`.children`):

* :mod:`.process_stats`: /proc readers (thread and process CPU, child processes, RSS), the RSS recorder and
  slope, tracemalloc in the node's process;
* :mod:`.tick_recorder`: every tick of the node's run (start, duration, the loop thread's CPU), through the
  node's ``tick_observer`` hook;
* :mod:`.children`: the child processes' entry points (the node, the mock robot, ``--arms N``'s N-arm mock,
  variant "external"'s ~/solve_ik server) and the ~/solve_ik handling variants patched into the node;
* :mod:`.processes`: the bench's side of them: waiting while watching them, lifecycle start-up, the stop;
* :mod:`.configs`: the node configs (b, c, d, x) and the goals streamed to them;
* :mod:`.perceived`: config (p): the mock depth camera and what the node holds of its cloud;
* :mod:`.service_stream`: the ~/solve_ik stream (--load's "service");
* :mod:`.node_figures`: one node's figures over a window (on time, tick durations and CPU, the loop thread): the
  definitions every closed-loop table uses;
* :mod:`.tracking_run`: one closed-loop run under a load (``bench_run``) and its row;
* :mod:`.arms_run`: ``--arms N``: N nodes in their namespaces against one N-arm mock process, a row per node;
* :mod:`.motion`: the motion scenarios (step goals; acceleration and jerk against the drive's bounds);
* :mod:`.twist`: the twist-stream runs (latency, tracking error, the stop);
* :mod:`.report`: the closed-loop runs' tables, targets and summaries.

Each module imports only modules listed before it (no cycles), and ``common`` from bench/ (the entry
script's directory, on sys.path); none imports bench_node.
"""

"""Child generators per draw (``draw_rngs``): numpy's ``SeedSequence.spawn`` against ours.

The privacy audit spawns one generator per release (about 26 million at full scale), in calls of up
to 200,000 draws. This prints the CPU microseconds per child of both ways over calls of that size
(children made and one normal drawn from each, as a release does), that the streams are the same,
and the load average. One thread; CPU time of this process (``time.process_time``). Usage::

    python benchmarks/spawn.py [--draws 200000] [--calls 5]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import bench_setup  # noqa: I001 (benchmarks/, on the path when a script runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200_000, help="children per call (default 200000)")
    ap.add_argument("--calls", type=int, default=5, help="calls of each way, interleaved (default 5)")
    args = ap.parse_args()
    if args.draws < 1 or args.calls < 1:
        ap.error(f"--draws and --calls must be >= 1; got {args.draws} and {args.calls}")
    bench_setup.prepare(1)
    import numpy as np

    from dperm.rngs import numpy_spawn, spawn_generators

    seconds = {"numpy": 0.0, "dperm": 0.0}
    same = True
    for call in range(args.calls):
        values = {}
        for name, spawn in (("numpy", numpy_spawn), ("dperm", spawn_generators)):
            rng = np.random.default_rng(np.random.SeedSequence([20261128, call]))
            t = time.process_time()
            values[name] = np.array([g.standard_normal() for g in spawn(rng, args.draws)])
            seconds[name] += time.process_time() - t
        same = same and np.array_equal(values["numpy"], values["dperm"])
    per = {k: 1e6 * v / (args.calls * args.draws) for k, v in seconds.items()}
    load = os.getloadavg()[0]
    print(f"per child (spawn + one normal), {args.calls} calls of {args.draws:,}; load average {load:.2f}")
    for name in ("numpy", "dperm"):
        print(f"  {name:6s} {per[name]:6.2f} CPU-µs")
    print(f"  ratio  {per['numpy'] / per['dperm']:.2f}x; the same streams: {same}")
    print(json.dumps({"draws": args.draws, "calls": args.calls, "numpy_us": round(per["numpy"], 3),
                      "dperm_us": round(per["dperm"], 3), "same": bool(same), "load": round(load, 2)}))
    if not same:
        raise SystemExit("the streams differ")


if __name__ == "__main__":
    main()

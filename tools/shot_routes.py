"""Where tools/bake_shots.py runs Blender: on this machine (`jobs` processes at once) or on a Dask
cluster (one task per shot). Both routes run the same two things: the library scan of every
shot's blend (headless/library_scan.py), before anything bakes, then each shot
(shot_runner.run_with_retries, attempts counted alike).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

import shot_runner

from headless import library_scan, output_paths


class RouteError(Exception):
    """The route cannot run at all (Dask missing, the scheduler unreachable): one line."""


class Interrupted(Exception):
    def __init__(self, results: dict[str, dict]) -> None:
        self.results = results


class ProgressBar:
    """A bar redrawn on a terminal; one line per finished shot either way (farm logs keep them)."""

    WIDTH = 30

    def __init__(self, total: int, stream=sys.stderr) -> None:
        self.total, self.stream, self.started = total, stream, time.perf_counter()
        self.counts: dict[str, int] = {}
        self.tty = stream.isatty()
        self.lock = threading.Lock()
        self._draw()

    def done(self, entry: dict) -> None:
        with self.lock:
            self.counts[entry["status"]] = self.counts.get(entry["status"], 0) + 1
            error = "" if entry["worst_error"] is None else f", worst tip error {entry['worst_error']:.3g}"
            detail = f" ({entry['error']})" if entry["status"] != "ok" and entry.get("error") else ""
            self._clear()
            print(f"bake_shots: {entry['name']}: {entry['status']} in {entry['seconds']:.1f} s{error}{detail}",
                  file=self.stream)  # fmt: skip
            self._draw()

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")

    def _draw(self) -> None:
        finished = sum(self.counts.values())
        if not self.tty and finished < self.total:
            return
        filled = self.WIDTH * finished // max(self.total, 1)
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {finished}/{self.total} shots"
                f"{' (' + states + ')' if states else ''}, {time.perf_counter() - self.started:.1f} s")  # fmt: skip
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and finished == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _chunks(items: list, n: int) -> list[list]:
    return [chunk for chunk in (items[i::n] for i in range(max(1, n))) if chunk]


class Local:
    """This machine, `jobs` Blender processes at once."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.name = f"local, {jobs} job(s)"

    def scan(self, prefix: list[str], blends: list[str], timeout: float | None, retries: int) -> dict:
        found: dict = {}
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for part in pool.map(lambda chunk: library_scan.scan(prefix, chunk, timeout, retries),
                                 _chunks(blends, self.jobs)):  # fmt: skip
                found.update(part)
        return found

    def bake(self, tasks: list[dict], retries: int, progress: ProgressBar) -> dict[str, dict]:
        """On Ctrl-C or SIGTERM kill every running Blender, cleanly (Interrupted)."""
        stop = threading.Event()
        live: set = set()
        lock = threading.Lock()

        def started(process) -> None:
            with lock:
                live.add(process)
            if stop.is_set():
                process.kill()

        def one(task: dict) -> dict:
            return shot_runner.run_with_retries(task, retries, on_start=started, stopped=stop.is_set)

        results: dict[str, dict] = {}
        pool = ThreadPoolExecutor(max_workers=self.jobs)
        futures = {pool.submit(one, task): task for task in tasks}
        try:
            for future in as_completed(futures):
                entry = future.result()
                results[entry["name"]] = entry
                progress.done(entry)
        except KeyboardInterrupt:
            stop.set()
            with lock:
                for process in live:
                    if process.poll() is None:
                        process.kill()
            pool.shutdown(wait=True, cancel_futures=True)  # each runner removes its temporary file
            for future, task in futures.items():
                if future.done() and not future.cancelled() and task["name"] not in results:
                    results[task["name"]] = future.result()
            raise Interrupted(results) from None
        pool.shutdown(wait=True)
        return results

    def close(self) -> None:
        pass


def dask_ready() -> None:
    """RouteError unless Dask's client can be imported here: checked before anything runs."""
    try:
        import cloudpickle  # noqa: F401
        from dask.distributed import Client  # noqa: F401
    except ImportError:
        raise RouteError("--scheduler needs Dask: pip install 'dask[distributed]'") from None


class Dask:
    """A running `distributed` scheduler: one task per shot. Workers need not have this repository:
    the runner and the scan travel with each task (the paths must be shared)."""

    def __init__(self, address: str) -> None:
        dask_ready()
        import cloudpickle
        from dask.distributed import Client

        for module in (shot_runner, library_scan, output_paths):
            cloudpickle.register_pickle_by_value(module)
        self.name = f"dask {address}"
        try:  # Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)
            self.client = Client(address)
        except (OSError, ValueError, TypeError) as exc:
            raise RouteError(f"cannot reach the Dask scheduler at {address}: {exc}") from None

    def scan(self, prefix: list[str], blends: list[str], timeout: float | None, retries: int) -> dict:
        workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        # A lambda, as in bake(): cloudpickle then ships library_scan by value (by name, a worker
        # without this repository could not import it).
        futures = [self.client.submit(lambda c: library_scan.scan(prefix, c, timeout, retries), chunk, pure=False)
                   for chunk in _chunks(blends, workers)]  # fmt: skip
        found: dict = {}
        try:
            for part in self.client.gather(futures):
                found.update(part)
        except library_scan.ScanError:
            raise
        except Exception as exc:  # the cluster's own failure (a lost worker, a task it could not load)
            raise RouteError(f"the library scan failed on the Dask cluster: {' '.join(str(exc).split())}") from None
        return found

    def bake(self, tasks: list[dict], retries: int, progress: ProgressBar) -> dict[str, dict]:
        """A crashed Blender is tried again inside the task (as here), which counts the attempts."""
        from dask.distributed import as_completed as dask_completed

        # A lambda: plain pickle cannot take it, so Dask falls back to cloudpickle for the task,
        # which then ships shot_runner by value (a bare shot_runner.run_shot would go by name).
        futures = {
            self.client.submit(lambda t: shot_runner.run_with_retries(t, retries), task, pure=False,
                               key=f"chain-ik-bake-{task['name']}-{os.getpid()}-{i}"): task
            for i, task in enumerate(tasks)
        }  # fmt: skip
        results: dict[str, dict] = {}
        try:
            for future in dask_completed(futures):
                task = futures[future]
                try:
                    entry = future.result()
                except Exception as exc:  # a lost worker (Dask re-ran it on another: attempts unknown)
                    entry = shot_runner.failed_entry(task, exc, attempts=None)
                results[task["name"]] = entry
                progress.done(entry)
        except KeyboardInterrupt:
            self.client.cancel(list(futures))  # a shot already running finishes; its output is complete or absent
            raise Interrupted(results) from None
        return results

    def close(self) -> None:
        self.client.close()

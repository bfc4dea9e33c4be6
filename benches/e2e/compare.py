"""Comparing two playbook runs' results after normalising what legitimately differs between runs
(the end-to-end benchmark and the demo: results written by callback_plugins/e2e_results.py)."""

from __future__ import annotations

import collections
import json
import re

# Result keys whose values differ from run to run without meaning anything.
VOLATILE_KEYS = {"start", "end", "delta", "elapsed", "worker_pid"}
# ... and in file status dicts (stat, find: those with an "inode"), times and inode identity.
VOLATILE_FILE_KEYS = {"atime", "mtime", "ctime", "inode", "version"}
# copy's content= goes through a controller temporary file with a random name.
RANDOM_BASENAME = re.compile(r"\.?(?:tmp)?[a-z0-9_]{8}")
# Temporary paths ansible-core makes up per task (remote tmp, module tmp).
TMP_PATH = re.compile(r"""(?:/[^\s'"]*)?ansible-(?:module)?tmp-[^\s'"]*""")
# ... and Mitogen's, per action.
MITOGEN_TMP = re.compile(r"ansible_mitogen_action_[0-9a-f]+")
# dd's (filesize) transfer statistics.
DD_STATS = re.compile(r"copied, [0-9.e+-]+ s, [0-9.]+ [kMGT]?B/s")
# ... and the same keys in results printed with -v.
PRINTED_TIMES = re.compile(r'"(start|end|delta)": "[^"]*"')
# Tasks whose output is random by nature (new keys, serial numbers): compared by keys only.
RANDOM_TASK = "random:"
# ... and how often such a task's "until" retried depends on timing (an async job's status).
RANDOM_RETRY = re.compile(r"FAILED - RETRYING: \[[^\]]*\]: random:")


def normalise(value):
    if isinstance(value, dict):
        drop = VOLATILE_KEYS | (VOLATILE_FILE_KEYS if "inode" in value else set())
        result = {k: normalise(v) for k, v in value.items() if k not in drop}
        basename = result.get("_original_basename")
        if isinstance(basename, str) and RANDOM_BASENAME.fullmatch(basename):
            result["_original_basename"] = "<random>"
        return result
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return DD_STATS.sub("copied, <time>", MITOGEN_TMP.sub("<mitogen-tmp>", TMP_PATH.sub("<ansible-tmp>", value)))
    return value


def normalise_entry(entry: dict) -> dict:
    if entry["task"].startswith(RANDOM_TASK):
        result = entry["result"]
        return {**entry, "result": {"keys": sorted(result), "changed": result.get("changed"), "failed": result.get("failed")}}
    return normalise(entry)


def normalised_output(output: str) -> list[str]:
    """The printed lines, sorted: hosts finish tasks in any order."""
    lines = []
    for line in output.splitlines():
        if RANDOM_RETRY.match(line):
            continue
        line = PRINTED_TIMES.sub(r'"\1": "<time>"', DD_STATS.sub("copied, <time>", TMP_PATH.sub("<ansible-tmp>", line)))
        included = re.match(r"(included: .* for )(.*)$", line)
        if included:
            line = included[1] + ", ".join(sorted(included[2].split(", ")))
        lines.append(line)
    return sorted(lines)


def differences(a_results: dict | None, a_output: str, b_results: dict | None, b_output: str, limit: int = 8,
                labels: tuple[str, str] = ("first", "second")) -> list[str]:
    """How run b differs from run a (empty when identical); ``labels`` name the two runs."""
    if a_results is None or b_results is None:
        return ["a run wrote no results file"]
    a, b = labels
    found: list[str] = []
    a_hosts, b_hosts = a_results["hosts"], b_results["hosts"]
    if sorted(a_hosts) != sorted(b_hosts):
        found.append(f"hosts differ: {sorted(a_hosts)} ({a}) vs {sorted(b_hosts)} ({b})")
    for host in sorted(set(a_hosts) & set(b_hosts)):
        tasks_a, tasks_b = a_hosts[host], b_hosts[host]
        if len(tasks_a) != len(tasks_b):
            found.append(f"{host}: {len(tasks_a)} task results ({a}) vs {len(tasks_b)} ({b})")
        for entry_a, entry_b in zip(tasks_a, tasks_b):
            x, y = normalise_entry(entry_a), normalise_entry(entry_b)
            if x != y:
                found.append(f"{host}: task {entry_a['task']!r}: {first_difference(x, y, labels=labels)}")
    if a_results["stats"] != b_results["stats"]:
        found.append(f"play recap differs: {json.dumps(a_results['stats'])[:300]} ({a}) vs "
                     f"{json.dumps(b_results['stats'])[:300]} ({b})")
    lines_a, lines_b = normalised_output(a_output), normalised_output(b_output)
    if lines_a != lines_b:
        only_a = collections.Counter(lines_a) - collections.Counter(lines_b)
        only_b = collections.Counter(lines_b) - collections.Counter(lines_a)
        found.append(f"printed output differs: {a} only {[x[:200] for x in list(only_a)[:3]]}, "
                     f"{b} only {[x[:200] for x in list(only_b)[:3]]}")
    return found[:limit] + ([f"... {len(found) - limit} more"] if len(found) > limit else [])


def differences_by_task(a_results: dict | None, a_output: str, b_results: dict | None, b_output: str,
                        labels: tuple[str, str] = ("first", "second"), limit: int = 100) -> list[str]:
    """How run b differs from run a, one line per task (the hosts where it differs, the first
    host's difference), then the play recap and the printed lines: for a run that is expected
    to differ (another implementation), where a list of every difference is the result."""
    if a_results is None or b_results is None:
        return ["a run wrote no results file"]
    a, b = labels
    by_task: dict[str, list[tuple[str, str]]] = {}
    order: list[str] = []
    a_hosts, b_hosts = a_results["hosts"], b_results["hosts"]
    found = [f"hosts differ: {sorted(a_hosts)} ({a}) vs {sorted(b_hosts)} ({b})"] if sorted(a_hosts) != sorted(b_hosts) else []
    for host in sorted(set(a_hosts) & set(b_hosts)):
        tasks_a, tasks_b = a_hosts[host], b_hosts[host]
        if len(tasks_a) != len(tasks_b):
            found.append(f"{host}: {len(tasks_a)} task results ({a}) vs {len(tasks_b)} ({b})")
        for entry_a, entry_b in zip(tasks_a, tasks_b):
            x, y = normalise_entry(entry_a), normalise_entry(entry_b)
            if x != y:
                task = entry_a["task"] if entry_a["task"] == entry_b["task"] else f"{entry_a['task']} / {entry_b['task']}"
                if task not in by_task:
                    by_task[task] = []
                    order.append(task)
                by_task[task].append((host, first_difference(x, y, labels=labels)))
    # Tasks that differ in the same way (on as many hosts) make one line.
    alike: dict[tuple[str, int], list[str]] = {}
    for task in order:
        hosts = by_task[task]
        alike.setdefault((hosts[0][1], len(hosts)), []).append(task)
    for (difference, count), tasks in alike.items():
        named = f"task {tasks[0]!r}" if len(tasks) == 1 else f"{len(tasks)} tasks ({', '.join(map(repr, tasks))})"
        found.append(f"{named} on {count} of {len(a_hosts)} hosts: {difference}")
    if a_results["stats"] != b_results["stats"]:
        found.append(f"play recap differs: {json.dumps(a_results['stats'])[:300]} ({a}) vs "
                     f"{json.dumps(b_results['stats'])[:300]} ({b})")
    lines_a, lines_b = normalised_output(a_output), normalised_output(b_output)
    if lines_a != lines_b:
        only_a = collections.Counter(lines_a) - collections.Counter(lines_b)
        only_b = collections.Counter(lines_b) - collections.Counter(lines_a)
        found.append(f"printed output differs: {sum(only_a.values())} lines {a} only, {sum(only_b.values())} {b} only;"
                     f" {a} only {[x[:200] for x in list(only_a)[:3]]}, {b} only {[x[:200] for x in list(only_b)[:3]]}")
    return found[:limit] + ([f"... {len(found) - limit} more"] if len(found) > limit else [])


def first_difference(a, b, where: str = "", labels: tuple[str, str] = ("first", "second")) -> str:
    """Where two normalised results first differ, and both values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, "<missing>") != b.get(key, "<missing>"):
                return first_difference(a.get(key, "<missing>"), b.get(key, "<missing>"), f"{where}.{key}", labels)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{index}]", labels)
    return f"{where or 'value'}: {json.dumps(a)[:200]} ({labels[0]}) != {json.dumps(b)[:200]} ({labels[1]})"

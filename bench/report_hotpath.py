"""The hot path's sections of docs/benchmarks.md: the routing decision's time per subtask with
the shared snapshot off and on, and what a refused request costs next to an answered one."""

from __future__ import annotations

from typing import Any

from bench.markdown import Lines, table, verdict

DECISION_WAYS = {
    "unshared": "snapshot off (every decision reads and ranks itself)",
    "shared": "snapshot on, requests alike",
    "shared_distinct": "snapshot on, every request's complexity new (rules and ranking rerun)",
    "shared_paced": "snapshot on, requests alike, one per ms",
    "shared_paced_5ms": "snapshot on, requests alike, one per 5 ms",
    "shared_paced_100ms": "snapshot on, requests alike, one per 100 ms (the snapshot expired)",
}


def _load(result: dict[str, Any]) -> str:
    before, after = result.get("load_before"), result.get("load_after")
    if before is None:
        return ""
    return f" Load average (1, 5, 15 min) before {before}, after {after}."


def _paces(result: dict[str, Any]) -> str:
    paces = result.get("paces")
    if not paces:
        return ""
    runs = ", ".join(f"{p['requests']} one per {p['every_ms']:g} ms" for p in paces.values())
    return f"; then requests alike at a steady pace ({runs}), the caches cooling between them"


def _life(result: dict[str, Any]) -> str:
    """What the snapshot's life makes of one request per 5 ms."""
    ttl = result.get("snapshot_ttl_ms", 5.0)
    if ttl <= 5.0:
        return f", where the {ttl:g} ms snapshot has expired by the next request and is rebuilt"
    return f" (the {ttl:g} ms snapshot serves about {ttl / 5:.0f} requests before it is rebuilt)"


def _pace_of(way: str) -> str:
    """``one per 5 ms`` of ``shared_paced_5ms``; ``back to back`` of ``back_to_back``."""
    return "back to back" if way == "back_to_back" else DECISION_WAYS[way].split(", ")[-1]


def _control(result: dict[str, Any]) -> Lines:
    """The paced slowdown of a fixed piece of Python beside the decision's (1 subtask)."""
    control = result.get("control_us")
    if not control or "shared_paced_5ms" not in control:
        return []
    alone, paced = control["back_to_back"]["p50"], control["shared_paced_5ms"]["p50"]
    decided = result["shared_plan_1_per_subtask_us"]["p50"]
    decided_paced = result["shared_paced_5ms_plan_1_per_subtask_us"]["p50"]
    ways = ", ".join(f"{figures['p50']:.1f} µs {_pace_of(way)}" for way, figures in control.items())
    return [
        "A fixed piece of Python with no routing in it (ranking 20 tuples and filling a dict), "
        f"timed the same ways, p50: {ways}. One request per 5 ms over back to back: "
        f"{paced / alone:.1f}x for it, {decided_paced / decided:.1f}x for a decision.",
        "",
    ]


def decision_section(result: dict[str, Any]) -> Lines:
    rows = []
    for size in (1, 10):
        for way, what in DECISION_WAYS.items():
            figures = result.get(f"{way}_plan_{size}_per_subtask_us")
            if figures is None:
                continue
            rows.append([size, what, f"{figures['p50']:.1f}", f"{figures['p99']:.1f}"])
    target = result["target_per_subtask_us"]
    shared = result["shared_plan_1_per_subtask_us"]["p50"]
    paced = result.get("shared_paced_5ms_plan_1_per_subtask_us", {}).get("p50")
    verdict_line = (
        f"Target: a decision ≤ {target:g} µs per subtask (p50) — {shared:.1f} µs with requests "
        f"alike back to back: {verdict(shared <= target)}."
        if paced is None
        else f"Target: a decision ≤ {target:g} µs per subtask (p50), back to back and at 200 "
        f"requests a second — {shared:.1f} µs back to back, {paced:.1f} µs at one request per "
        f"5 ms{_life(result)}: {verdict(max(shared, paced) <= target)}."
    )
    return [
        f"`Router.context` + `Router.decide` over {result['deployments']} deployments under the "
        f"default policy ({result['rules']} CEL rules), {result['rounds']} requests a way, "
        f"interleaved in blocks (`bench/decision.py`){_paces(result)}.{_load(result)}",
        "",
        *table(["subtasks", "way", "per subtask p50 (µs)", "p99 (µs)"], rows),
        *_control(result),
        verdict_line,
        "",
    ]


SHED_WAYS = {
    "answered": "answered (local sentiment, the whole path)",
    "shed_early": "refused by the server's protocol, before the app (as the gateway serves)",
    "shed": "refused by the outermost shedder (the app's first step)",
    "shed_inner": "refused by the shedder where it was (inside request id, log, errors)",
    "floor": "a bare ASGI app's fixed 503 on the same server",
}


def shed_section(result: dict[str, Any]) -> Lines:
    rows = []
    for mode in ("asgi", "http"):
        for way, what in SHED_WAYS.items():
            figures = result[mode].get(way)
            if figures is None:
                continue
            share = result[mode].get(f"{way}_share_of_answered_cpu")
            rows.append(
                [
                    mode,
                    what,
                    f"{figures['cpu_us']['median']:.1f}",
                    "-" if share is None else f"{share:.1%}",
                ]
            )
    http = result["http"]  # records before the protocol refused have no shed_early
    share = http.get("shed_early_share_of_answered_cpu", http["shed_share_of_answered_cpu"])
    # Records before the client had a process of its own counted its share in.
    client = (
        "the client in a process of its own, not counted"
        if "shed_early" in http
        else "the client's own share included"
    )
    return [
        "CPU per `POST /v1/infer` of the gateway's process (median over blocks of "
        f"{result['block']}), driven directly (`asgi`) and over loopback HTTP on the gateway's "
        f"uvicorn protocol (`http`, {client}) (`bench/shed_cost.py`).{_load(result)}",
        "",
        *table(["through", "request", "CPU µs", "share of an answer"], rows),
        f"Target: a refusal a small fraction (≤ 10 %) of an answer — {share:.1%} over HTTP: "
        f"{verdict(share <= 0.10)}.",
        "",
    ]


def servers_section(result: dict[str, Any]) -> Lines:
    lines = [
        "The same two apps served by uvicorn + httptools (the gateway's server, with its "
        "slow-client protocol) and by Granian (Rust, one runtime thread), each in a process of "
        f"its own, alternately, {result['rounds']} rounds of {result['duration_s']:.0f} s per "
        "rate after 3 s of warm-up (`bench/servers.py`): `bare` answers a fixed JSON body, "
        "`gateway` is the whole gateway on a pinned chat to an instant upstream. Medians over "
        "rounds:",
        "",
    ]
    lines += table(
        ["app / server / rate", "server CPU per request (µs)", "p50", "p99", "worst errors"],
        [
            [
                name,
                f"{row['cpu_us_per_request']:.0f}",
                f"{row['p50_ms']:.2f} ms",
                f"{row['p99_ms']:.2f} ms",
                f"{row['max_error_rate']:.2%}",
            ]
            for name, row in result["summary"].items()
        ],
    )
    held = result["guarantees"]
    lines += [
        "Guarantees the gateway's server keeps, and Granian's: "
        + "; ".join(
            f"{name}: {'yes' if g['held'] else 'no'} ({g['how']})" for name, g in held.items()
        )
        + ".",
        "",
        *[f"Verdict: {line}." for line in result["verdicts"]],
        "",
    ]
    return lines


def frontdoor_section(result: dict[str, Any]) -> Lines:
    layers = result["layers"]
    lines = [
        f"{result['what']} (`bench/frontdoor.py`; CPU per request, `own` is the block less a "
        "bare trivial app).",
        "",
    ]
    lines += table(
        ["around a trivial app", "CPU µs", "own µs", "frames to the app", "send wrappers"],
        [
            [
                name,
                f"{row['cpu_us']:.1f}",
                f"{row['own_cpu_us']:.1f}",
                str(row["frames_to_app"]),
                str(row["send_wrappers"]),
            ]
            for name, row in layers.items()
        ],
    )
    lines += table(
        ["answered /v1/infer", "chain µs (median block)", "front door µs", "paired by round"],
        [
            [
                way,
                f"{rows['chain']['cpu_us']:.0f}",
                f"{rows['front_door']['cpu_us']:.0f}",
                f"{rows['front_door']['less_chain_us']:+.0f}",
            ]
            for way, rows in result["answered"].items()
        ],
    )
    return lines


def pathwork_section(result: dict[str, Any]) -> Lines:
    total = result["instructions_per_request"]
    chat = result.get("chat")
    lines = [
        f"{result['what']} (`bench/pathwork.py`, `sys.settrace`, {result['requests']} "
        f"requests): **{total:.0f}** a request, {result['frames_per_request']:.0f} frames "
        "entered or resumed. A count, not a time: it is the same on a busy machine and a "
        "quiet one, so it compares two versions of the code where a CPU time cannot; it does "
        "not see native work (the model's run, JSON, sockets).",
        "",
    ]
    if chat is None:  # a record from before the chat was counted
        rows = [
            [layer, f"{count:.0f}", f"{count / total:.1%}"]
            for layer, count in result["by_layer"].items()
        ]
        return [*lines, *table(["layer", "instructions a request", "share"], rows)]
    chat_total = chat["instructions_per_request"]
    layers = list(dict.fromkeys([*chat["by_layer"], *result["by_layer"]]))
    rows = [
        [
            layer,
            f"{result['by_layer'].get(layer, 0.0):.0f}",
            f"{chat['by_layer'].get(layer, 0.0):.0f}",
            f"{chat['by_layer'].get(layer, 0.0) / chat_total:.1%}",
        ]
        for layer in layers
    ]
    rows.append(["**total**", f"**{total:.0f}**", f"**{chat_total:.0f}**", ""])
    return [
        *lines,
        f"Beside it, {chat['what']}: **{chat_total:.0f}** a request, "
        f"{chat['frames_per_request']:.0f} frames.",
        "",
        *table(["layer", "local sentiment", "pinned chat", "chat share"], rows),
    ]


def upstream_client_section(result: dict[str, Any]) -> Lines:
    rows = [
        [
            name,
            f"{row['instructions_per_call']:.0f}",
            f"{row['cpu_us']:.1f}",
            f"{row['p50_ms']:.3f}",
            f"{row['p99_ms']:.3f}",
        ]
        for name, row in result["rows"].items()
    ]
    ratios = result["ratios"]
    return [
        f"{result['what']} (`bench/upstream_client.py`). The request path's remote calls go "
        "through `backends/httpclient.py`; aiohttp still carries streamed answers and the "
        "calls off the path.",
        "",
        *table(
            [
                "client",
                "Python instructions a call",
                "CPU µs a call",
                "round trip p50 ms",
                "p99 ms",
            ],
            rows,
        ),
        f"aiohttp took {ratios['instructions']} times the instructions of the request path's "
        f"client, {ratios['cpu']} times its CPU and {ratios['p50']} times its round trip at p50.",
    ]

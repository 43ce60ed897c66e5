"""The report's section on automatic protection: the transformation chosen, why, what else was
close, and the lattice's R-U map (the Pareto frontier of the evaluated nodes)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

__all__ = ["frontier_figures", "search_sections"]

#: Rows of the frontier table shown (the frontier of a large lattice can be long).
_MAX_FRONTIER_ROWS = 40


def _searches(session: Any) -> list[tuple[Any, Any]]:
    """``(step, SearchResult)`` of every automatic protection step."""
    return [
        (s, s.result.details["search"]) for s in session.history if "search" in s.result.details
    ]


def search_sections(session: Any) -> list[dict[str, Any]]:
    """One section per automatic protection step (empty without one)."""
    from sdckit.lattice.explain import chosen_words, close_nodes, frontier

    n = session.original.n_records
    sections = []
    for step, search in _searches(session):
        rows = [(label, str(value)) for label, value in search.summary().rows]
        why = (
            f"The target is {' and '.join(search.models)}. At each node of the lattice (one "
            "level per key), the records of the classes that fail it would be suppressed; a "
            f"node qualifies when they are at most {search.suppression_limit:.2%} of the "
            f"records. Of the qualifying nodes, the chosen one has the least loss by "
            f"{search.measure} (of equal losses, the first in order of levels)."
        )
        close = close_nodes(search, n, 5)
        front = frontier(search, n)
        sections.append(
            {
                "step": step.number,
                "chosen": chosen_words(search, n),
                "why": why,
                "rows": rows,
                "close": {
                    "columns": ["node", "loss", "records suppressed", "suppressed (%)"],
                    "rows": [
                        (node, f"{loss:g}", f"{sup:,}", f"{100 * risk:.2f}")
                        for node, loss, sup, risk in close.select(
                            "node", "loss", "n_suppressed", "risk"
                        ).rows()
                    ],
                },
                "frontier": {
                    "columns": [
                        "node",
                        "loss",
                        "records in failing classes (%)",
                        "meets the target",
                        "chosen",
                    ],
                    "rows": [
                        (
                            node,
                            f"{loss:g}",
                            f"{100 * risk:.2f}",
                            "yes" if ok else "no",
                            "chosen" if chosen else "",
                        )
                        for node, loss, risk, ok, chosen in front.head(_MAX_FRONTIER_ROWS)
                        .select("node", "loss", "risk", "anonymous", "chosen")
                        .rows()
                    ],
                    "more": max(front.height - _MAX_FRONTIER_ROWS, 0),
                },
            }
        )
    return sections


def frontier_figures(session: Any) -> list[tuple[Figure, str]]:
    """The lattice's R-U map per automatic protection step: every evaluated node, the
    frontier, the suppression limit and the chosen node."""
    import polars as pl

    from sdckit.lattice.explain import frontier

    n = session.original.n_records
    out = []
    for step, search in _searches(session):
        nodes = search.nodes.filter(pl.col("loss").is_not_null() & pl.col("loss").is_not_nan())
        risk = 100 * nodes.get_column("n_suppressed").to_numpy() / max(n, 1)
        front = frontier(search, n)
        fig = Figure(figsize=(8, 5.6))
        ax = fig.add_subplot()
        ok = nodes.get_column("anonymous").to_numpy()
        loss = nodes.get_column("loss").to_numpy()
        ax.scatter(risk[ok], loss[ok], s=12, color="tab:blue", label="meets the target")
        ax.scatter(risk[~ok], loss[~ok], s=12, color="lightgrey", label="fails it")
        ax.plot(100 * front["risk"], front["loss"], "--", color="black", lw=1,
                label="Pareto frontier")  # fmt: skip
        ax.axvline(100 * search.suppression_limit, color="tab:red", lw=1,
                   label="suppression limit")  # fmt: skip
        chosen = front.filter(pl.col("chosen"))
        if chosen.height:
            ax.scatter(100 * chosen["risk"], chosen["loss"], s=160, facecolors="none",
                       edgecolors="black", linewidths=2, label="chosen")  # fmt: skip
        ax.set_xlabel("records in classes failing the target (%)")
        ax.set_ylabel(f"loss ({search.measure})")
        ax.legend(loc="best", fontsize="small")
        caption = (
            f"Step {step.number}: the lattice's R-U map (each evaluated node; circled: the "
            "chosen transformation)"
        )
        out.append((fig, caption))
    return out

"""What a search chose and why, in words and tables: for the command line, report and browser.

* :func:`chosen_words` says which transformation was chosen, its loss and what it suppressed;
* :func:`close_nodes` lists the next best nodes that also meet the target;
* :func:`frontier` is the lattice's R-U map: the evaluated nodes that no other node beats on
  both risk and loss.  The risk of a node is the share of records in classes that fail the
  target there (what would have to be suppressed); the optimum is the least-loss node of the
  frontier whose risk is within the suppression limit (and whose sample-based models hold).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from sdckit.lattice.search import SearchResult

__all__ = ["chosen_words", "close_nodes", "frontier", "node_text"]


def node_text(keys: tuple[str, ...], levels: tuple[int, ...] | list[int]) -> str:
    """``age=2, sex=0``."""
    return ", ".join(f"{k}={int(v)}" for k, v in zip(keys, levels, strict=True))


def _evaluated(result: SearchResult) -> pl.DataFrame:
    """The nodes with a loss and a suppression count (an algorithm may list pruned ones)."""
    nodes = result.nodes
    keep = pl.col("loss").is_not_null() & ~pl.col("loss").is_nan()
    return nodes.filter(keep & pl.col("n_suppressed").is_not_null())


def chosen_words(result: SearchResult, n_records: int) -> str:
    """The chosen transformation in one sentence.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import Height, KAnonymity, LatticeData, search_lattice
    >>> df = pl.DataFrame({"sex": ["f", "m", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> r = search_lattice(data, [KAnonymity(2)], Height(), suppression_limit=0.4)
    >>> words = chosen_words(r, 3)
    >>> words.split(": ")[0]
    'Chose sex=0 (loss 0 by Height) for 2-anonymity'
    >>> words.split(": ")[1]
    '1 record suppressed (33.33 %, limit 40.00 %); proven optimal, 1 of 2 nodes evaluated.'
    """
    if result.optimum is None:
        return (
            f"No transformation meets {' and '.join(result.models)} with at most "
            f"{result.suppression_limit:.2%} of the records suppressed "
            f"({result.n_evaluated} of {result.n_nodes} nodes evaluated)."
        )
    share = result.n_suppressed / n_records if n_records else 0.0
    records = "record" if result.n_suppressed == 1 else "records"
    proof = (
        "proven optimal"
        if result.proven_optimal
        else "the best found (not proven optimal: a model or the measure is not monotone)"
    )
    return (
        f"Chose {node_text(result.keys, result.optimum)} (loss {result.loss:g} by "
        f"{result.measure}) for {' and '.join(result.models)}: {result.n_suppressed} "
        f"{records} suppressed ({share:.2%} %, limit {result.suppression_limit:.2%} %); "
        f"{proof}, {result.n_evaluated} of {result.n_nodes} nodes evaluated."
    ).replace("% %", " %")


def _with_node(frame: pl.DataFrame, keys: tuple[str, ...], n_records: int) -> pl.DataFrame:
    return frame.with_columns(
        pl.concat_str([pl.format(f"{k}={{}}", pl.col(k)) for k in keys], separator=", ").alias(
            "node"
        ),
        (pl.col("n_suppressed") / max(n_records, 1)).alias("risk"),
    )


def close_nodes(result: SearchResult, n_records: int, n: int = 5) -> pl.DataFrame:
    """The ``n`` least-loss nodes meeting the target after the optimum (``node``, ``loss``,
    ``n_suppressed``, ``risk`` and the levels), best first."""
    nodes = _evaluated(result).filter(pl.col("anonymous"))
    if result.optimum is not None:
        is_optimum = pl.all_horizontal(
            [pl.col(k) == v for k, v in zip(result.keys, result.optimum, strict=True)]
        )
        nodes = nodes.filter(~is_optimum)
    nodes = nodes.sort(["loss", *result.keys]).head(n)
    return _with_node(nodes, result.keys, n_records).select(
        "node", "loss", "n_suppressed", "risk", *result.keys
    )


def frontier(result: SearchResult, n_records: int) -> pl.DataFrame:
    """The Pareto frontier of the evaluated nodes: no other node has lower (or equal) risk and
    lower (or equal) loss with one of them strictly lower.  Sorted by loss; ``chosen`` marks
    the optimum.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import Height, KAnonymity, LatticeData, search_lattice
    >>> df = pl.DataFrame({"sex": ["f", "m", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> r = search_lattice(data, [KAnonymity(2)], Height(), suppression_limit=0.4,
    ...                    algorithm="exhaustive")  # every node evaluated
    >>> frontier(r, 3).select("node", "loss", "risk", "chosen").rows()
    [('sex=0', 0.0, 0.3333333333333333, True), ('sex=1', 1.0, 0.0, False)]
    """
    nodes = _with_node(_evaluated(result), result.keys, n_records)
    nodes = nodes.sort(["loss", "risk", *result.keys])
    risk = nodes.get_column("risk").to_numpy()
    # sorted by loss then risk: a node is on the frontier when its risk is below that of
    # every node before it (of lower loss, or of the same loss and less risk)
    best_before = np.minimum.accumulate(np.concatenate([[math.inf], risk[:-1]]))
    keep = risk < best_before
    if result.optimum is None:
        chosen = pl.lit(False)
    else:
        chosen = pl.all_horizontal(
            [pl.col(k) == v for k, v in zip(result.keys, result.optimum, strict=True)]
        )
    # the optimum stays on the map even where a node of lower loss fails the target with
    # less risk (a sample-based model can refuse a node the frontier keeps)
    nodes = nodes.with_columns(chosen.alias("chosen"))
    chosen_mask = nodes.get_column("chosen").to_numpy()
    return nodes.filter(pl.Series(keep | chosen_mask)).select(
        "node", "loss", "risk", "n_suppressed", "anonymous", "chosen", *result.keys
    )

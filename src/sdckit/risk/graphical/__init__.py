"""Decomposable graphical models of the key table: chordal graphs, closed-form fit, model search,
per-record population-uniqueness risk (Takemura & Endo)."""

from sdckit.risk.graphical.chordal import (
    can_add_edge,
    can_remove_edge,
    chordal_graphs,
    graph_from_cliques,
    is_chordal,
    junction_tree,
    maximum_cardinality_search,
    perfect_sequence,
    random_chordal_graph,
)
from sdckit.risk.graphical.model import (
    DecomposableFit,
    DecomposableModel,
    DecomposableRiskResult,
    decomposable_risk,
    fit_decomposable,
)
from sdckit.risk.graphical.search import ModelSearchResult, search_decomposable

__all__ = [
    "DecomposableFit",
    "DecomposableModel",
    "DecomposableRiskResult",
    "ModelSearchResult",
    "can_add_edge",
    "can_remove_edge",
    "chordal_graphs",
    "decomposable_risk",
    "fit_decomposable",
    "graph_from_cliques",
    "is_chordal",
    "junction_tree",
    "maximum_cardinality_search",
    "perfect_sequence",
    "random_chordal_graph",
    "search_decomposable",
]

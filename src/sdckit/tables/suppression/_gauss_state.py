"""The state of the Gauss kernel as a few records of arrays (``_gauss_kernel.py``).

The kernel is compiled by numba, which takes named tuples of arrays as arguments, passes them
to other compiled functions and builds new ones (a record whose arrays grew is built again), at
no cost against separate arrays.  So every kernel function takes the records it works on
instead of long lists of arrays, and the Python driver (:mod:`.elimination`) allocates them
once per run.  The records are plain named tuples: the arrays in them are changed in place,
an array that grows makes a new record.

The fields keep the short names of the kernel's algorithm (see ``_gauss_kernel.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Buffers", "Fingerprints", "LiveMatrix", "Respondents", "WorkSpace"]


class LiveMatrix(NamedTuple):
    """The live matrix: the basis moves (rows) and what they do to each cell (columns).

    Rows are sorted ``(column, value)`` blocks in the pool ``pc`` / ``pv`` (``rs`` start,
    ``rl`` length, ``rcap`` capacity, ``ralive``); a column is a list of rows (``lp`` from
    ``cs``, ``cl``) plus a linked log (``lg_row`` / ``lg_next`` from ``chead``) of the rows
    that gained it later.  ``cnt`` is the exact number of non-zeros of each live column,
    ``flags`` its role (LIVE, PRIM, ATT), ``hist_p`` / ``hist_a`` the histograms of the
    counts of the primaries and of the respondents' cells, ``ctr`` the counters (``C_*``).
    ``pc``, ``pv``, ``lp``, ``lg_row`` and ``lg_next`` grow (a new record).
    """

    rs: np.ndarray
    rl: np.ndarray
    rcap: np.ndarray
    ralive: np.ndarray
    pc: np.ndarray
    pv: np.ndarray
    cs: np.ndarray
    cl: np.ndarray
    lp: np.ndarray
    chead: np.ndarray
    lg_row: np.ndarray
    lg_next: np.ndarray
    cnt: np.ndarray
    flags: np.ndarray
    hist_p: np.ndarray
    hist_a: np.ndarray
    ctr: np.ndarray


class Respondents(NamedTuple):
    """The respondents (groups) of the single-contributor cells (read only).

    ``own``: the group all of a cell's rows belong to (-1: none); ``cgrp``: the group of an
    attacker cell; ``gsize``: cells of each group; ``gptr`` / ``gcells``: CSR of the cells of
    each group.
    """

    own: np.ndarray
    cgrp: np.ndarray
    gsize: np.ndarray
    gptr: np.ndarray
    gcells: np.ndarray


class WorkSpace(NamedTuple):
    """Work arrays of fixed size: stamps, the rows of the published column, the factors of
    the update and the undo record of a tentative update."""

    stamp: np.ndarray  # per row: de-duplication of column lists
    stamp2: np.ndarray  # per row: the same, for the checks
    cstamp: np.ndarray  # per cell
    share: np.ndarray  # per cell: shared-column counts of the pivot choice
    rmap: np.ndarray  # per row: (dense row, tag) of the rank tests
    gseen: np.ndarray  # per group
    gseen2: np.ndarray
    jr: np.ndarray  # the rows of the published column
    jv: np.ndarray  # and its values there
    wr: np.ndarray  # rows and values of a checked column
    wv: np.ndarray
    tmp: np.ndarray  # cells of one or two groups
    fa: np.ndarray  # row i became (fa[i] * row - fb[i] * pivot) / fg[i]
    fb: np.ndarray
    fg: np.ndarray
    u_rs: np.ndarray  # undo: the old slots of the rows
    u_rl: np.ndarray
    u_rcap: np.ndarray
    u_cols: np.ndarray  # undo: the columns touched, their counts and list heads
    u_cnt: np.ndarray
    u_head: np.ndarray
    u_off: np.ndarray  # undo: where a row's old content is in ``Buffers.ub_c`` (-1: none)


class Buffers(NamedTuple):
    """Work arrays that grow with the longest row (a new record): the pivot row, the row
    being merged, the merged row, the columns it gained, and the undo copies of the rows
    written in place."""

    prv_c: np.ndarray
    prv_v: np.ndarray
    cur_c: np.ndarray
    cur_v: np.ndarray
    s_c: np.ndarray
    s_v: np.ndarray
    fills: np.ndarray
    ub_c: np.ndarray
    ub_v: np.ndarray


class Fingerprints(NamedTuple):
    """Column fingerprints (see ``_gauss_modular``): row weights ``w1`` / ``w2``, each
    tracked column's fingerprints ``h1`` / ``h2`` and key ``keyof``, the hash table of the
    keys (``tkey`` / ``tcol``, ``tstat``: slots used), and the work space of an update
    (``nw1`` .. ``nkey``, ``members``, the pairs ``out_a`` / ``out_b``)."""

    w1: np.ndarray
    w2: np.ndarray
    h1: np.ndarray
    h2: np.ndarray
    keyof: np.ndarray
    tkey: np.ndarray
    tcol: np.ndarray
    tstat: np.ndarray
    nw1: np.ndarray
    nw2: np.ndarray
    ccol: np.ndarray
    nh1: np.ndarray
    nh2: np.ndarray
    nkey: np.ndarray
    members: np.ndarray
    out_a: np.ndarray
    out_b: np.ndarray

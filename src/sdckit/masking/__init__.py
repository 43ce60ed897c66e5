"""Protection methods for microdata.

Each method is a class with keyword-only parameters (``Pram(min_diagonal=0.8, seed=1)``) and a
function twin (``pram(df, variables=[...], seed=1)``) generated from the class by
:func:`sdckit.twins.function_twin`: the same parameters under the same names, plus the roles of
:class:`~sdckit.microdata.Microdata`.  Both return a :class:`Protected` with the protected data
in the caller's frame type, row order and index, and a record of what changed.
"""

from sdckit.masking._marginal_swap import MarginalPreservingSwap, marginal_swap, swap_sides
from sdckit.masking._microaggregation import (
    Microaggregation,
    information_loss_lower_bound,
    information_loss_sse,
    microaggregation,
)
from sdckit.masking._pram import (
    Pram,
    PramEstimate,
    generate_transition,
    invariant_transition,
    pram,
    pram_estimate,
)
from sdckit.masking._rank_swapping import RankSwapping, rank_swapping
from sdckit.masking.noise import AddNoise, add_noise
from sdckit.masking.recoding import (
    GlobalRecoding,
    IntervalRecoding,
    TopBottomCoding,
    global_recode,
    recode_intervals,
    top_bottom_code,
)
from sdckit.masking.record_swapping import TargetedRecordSwapping, targeted_record_swapping
from sdckit.masking.sampling import SubSample, subsample
from sdckit.masking.shuffling import Shuffling, shuffle
from sdckit.masking.suppression import (
    LocalSuppression,
    RiskSuppression,
    local_suppression,
    suppress_risky_records,
)
from sdckit.masking.synthetic import Synthesis, Synthesizer, synthesize
from sdckit.masking.weights import WeightCalibration, calibrate_weights
from sdckit.protection import Protected, ProtectionMethod

__all__ = [
    "AddNoise",
    "GlobalRecoding",
    "IntervalRecoding",
    "LocalSuppression",
    "MarginalPreservingSwap",
    "Microaggregation",
    "Pram",
    "PramEstimate",
    "Protected",
    "ProtectionMethod",
    "RankSwapping",
    "RiskSuppression",
    "Shuffling",
    "SubSample",
    "Synthesis",
    "Synthesizer",
    "TargetedRecordSwapping",
    "TopBottomCoding",
    "WeightCalibration",
    "add_noise",
    "calibrate_weights",
    "generate_transition",
    "global_recode",
    "information_loss_lower_bound",
    "information_loss_sse",
    "invariant_transition",
    "local_suppression",
    "marginal_swap",
    "microaggregation",
    "pram",
    "pram_estimate",
    "rank_swapping",
    "recode_intervals",
    "shuffle",
    "subsample",
    "suppress_risky_records",
    "swap_sides",
    "synthesize",
    "targeted_record_swapping",
    "top_bottom_code",
]

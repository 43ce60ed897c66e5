"""What the release check found, and what fixes it: structured, worded by each face.

A :class:`ReleaseFinding` says through which released column (the *channel*) which protected
values came back, how many, and how many chance alone would give.  Each finding carries the
:class:`Remedy` objects that fix it; a remedy is an action on the job (a method, a role, a plan
choice), worded here for a person (:meth:`Remedy.words`); the faces word it in their own
terms (the command line in job-file syntax, :mod:`sdckit.jobs.wording`; the browser interface
in the words of its controls).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ACTIONS", "ReleaseFinding", "Remedy"]

#: The remedies the check can propose, by action name.
ACTIONS = (
    "drop",
    "link",
    "household_level",
    "calibrate_weights",
    "shuffle",
    "derive_household_size",
    "drop_household_id",
    "recode",
    "suppress",
    "identifier",
    "protect_keys",
)


@dataclass(frozen=True)
class Remedy:
    """One way to fix a finding.

    Attributes
    ----------
    action : str
        One of :data:`ACTIONS`.
    column : str or None
        The column the action applies to (the channel, or the variable to declare).
    target : str or None
        The protected variable concerned.
    """

    action: str
    column: str | None = None
    target: str | None = None

    def words(self) -> str:
        """The remedy for a person using the browser interface."""
        c, t = self.column, self.target
        return {
            "drop": f"leave the column {c!r} out of the released file",
            "link": f"mark {c!r} as linked to {t!r}, so that it is suppressed wherever {t!r} is",
            "household_level": (
                f"mark {t!r} as household-level, so that every method treats it once per "
                "household and all members show the same value"
            ),
            "calibrate_weights": (
                f"replace the weight {c!r} by weights calibrated to the released variables "
                "(the weight calibration method, after the other steps)"
            ),
            "shuffle": "release the records in a random order",
            "derive_household_size": (
                f"release {t!r} as the count of the released members of each household "
                "(it cannot be hidden while the household id is released) and protect the "
                "other variables instead"
            ),
            "drop_household_id": "leave the household id out of the released file",
            "recode": (f"recode {c!r} to the released detail of {t!r} (or coarser) before release"),
            "suppress": (
                f"suppress {t!r} less and other keys instead: give it a more important rank "
                "(a lower number) in local suppression, since its suppressed values come back; "
                "or recode the columns that give it back"
            ),
            "identifier": f"mark {c!r} as a direct identifier (never released)",
            "protect_keys": (
                f"protect the key variables ({t}) further: recode them into fewer categories, "
                "or suppress values (local suppression to the target's k) as a last step"
            ),
        }[self.action]


@dataclass(frozen=True)
class ReleaseFinding:
    """One way the released file gives back protected values (or breaks the target).

    Attributes
    ----------
    check : str
        ``"k_anonymity"``, ``"risk"``, ``"determined"`` (a released column gives values back),
        ``"household"`` (through the household), ``"perturbed"`` (a perturbed number is
        estimated more closely) or ``"identifier"``.
    column : str
        The channel: the released column (or ``"record order"``, ``"households rebuilt
        from ..."``) through which it happens; for k-anonymity the keys.
    target : str
        The variable whose values come back (or the measure).
    count : float
        Values given back (for ``"perturbed"``: values estimated more closely than released),
        or the measure's value.
    how : str
        In words, with the count, the chance count and the channel.
    protected : int
        The protected values of ``target`` the attack was tried on (0 where not applicable).
    chance : float
        How many of the values the attacker asserted a guess for would be right by chance.
    remedies : tuple of Remedy
        The fixes, best first.
    """

    check: str
    column: str
    target: str
    count: float
    how: str
    protected: int = 0
    chance: float = 0.0
    remedies: tuple[Remedy, ...] = field(default=())

    def fix_words(self) -> str:
        """The remedies for a person (browser interface)."""
        return " or ".join(r.words() for r in self.remedies)

    def line(self) -> str:
        """The finding and its fix in one line, in words (each face may word the fix in its
        own terms: :func:`sdckit.jobs.wording.finding_line` in job-file syntax)."""
        if not self.remedies:
            return self.how
        return f"{self.how} Fix: {self.fix_words()}."

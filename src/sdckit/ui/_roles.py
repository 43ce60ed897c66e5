"""The roles form: one role per column, read into a job's ``[roles]`` table and back."""

from __future__ import annotations

from typing import Any

from sdckit.errors import ParameterError

__all__ = ["PRIMARY_ROLES", "role_of", "roles_from_form"]

#: The roles a column can have in the roles form (one each), with their labels.
PRIMARY_ROLES: dict[str, str] = {
    "": "not used",
    "key": "key variable",
    "numeric": "numeric variable",
    "weight": "sampling weight",
    "strata": "strata",
    "household": "household id",
    "sensitive": "sensitive variable",
    "identifier": "direct identifier",
    "linked": "linked to a key",
}

_LISTS = {"key": "keys", "numeric": "numeric", "sensitive": "sensitive",
          "identifier": "identifiers"}  # fmt: skip
_SINGLES = {"weight": "weight", "strata": "strata", "household": "household"}


def role_of(roles: dict[str, Any], column: str) -> tuple[str, bool]:
    """The primary role of ``column`` in a ``[roles]`` table, and whether it is
    household-level.

    Examples
    --------
    >>> role_of({"keys": ["age"], "weight": "w", "household_level": ["age"]}, "age")
    ('key', True)
    >>> role_of({"keys": ["age"]}, "income")
    ('', False)
    """
    for role, table_key in _LISTS.items():
        if column in roles.get(table_key, []):
            return role, column in roles.get("household_level", [])
    for role, table_key in _SINGLES.items():
        if column == roles.get(table_key):
            return role, column in roles.get("household_level", [])
    role = "linked" if column in roles.get("linked", {}) else ""
    return role, column in roles.get("household_level", [])


def roles_from_form(
    assignments: dict[str, str], household_level: list[str], linked_to: dict[str, str]
) -> dict[str, Any]:
    """The ``[roles]`` table from one role per column (in column order).

    Examples
    --------
    >>> roles_from_form({"age": "key", "w": "weight", "d": "linked"}, [], {"d": "age"})
    {'keys': ['age'], 'weight': 'w', 'linked': {'d': 'age'}}
    """
    roles: dict[str, Any] = {}
    for column, role in assignments.items():
        if role in _LISTS:
            roles.setdefault(_LISTS[role], []).append(column)
        elif role in _SINGLES:
            if _SINGLES[role] in roles:
                raise ParameterError(
                    f"Only one column can be the {PRIMARY_ROLES[role]}; "
                    f"{roles[_SINGLES[role]]!r} and {column!r} are both."
                )
            roles[_SINGLES[role]] = column
        elif role == "linked":
            key = linked_to.get(column, "")
            if not key:
                raise ParameterError(
                    f"The column {column!r} is linked to a key: choose the key variable it is "
                    "linked to."
                )
            roles.setdefault("linked", {})[column] = key
        elif role:
            raise ParameterError(f"Unknown role {role!r} for the column {column!r}.")
    if household_level:
        roles["household_level"] = list(household_level)
    return roles

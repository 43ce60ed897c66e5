"""Protection methods for microdata (recoding, suppression, microaggregation, noise, ...)."""

from sdckit.masking._base import Protected, ProtectionMethod

__all__ = ["Protected", "ProtectionMethod"]

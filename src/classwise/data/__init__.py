"""Image sets: the in-memory container and the embedded digits demo data."""

from classwise.data.digits import load_digits_imageset, load_digits_split
from classwise.data.imageset import ImageSet

__all__ = ["ImageSet", "load_digits_imageset", "load_digits_split"]

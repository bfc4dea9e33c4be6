from . import text
from .text.converters import to_native
from .. import basic
from ..six import moves
from ... import release
if True:
    from . import warnings

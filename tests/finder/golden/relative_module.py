from . import warnings
from .text import converters
from .. import six
from ..urls import fetch_url, open_url as ou
from .... import too_far
from ......... import way_too_far

from ansible.module_utils.six import _six, other
from ansible.module_utils.six.moves import urllib
def f():
    from whatever import _six

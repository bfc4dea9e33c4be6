# Deprecated: the former name of ansible_accel.masking, whose names it re-exports.
from .masking import AnsibleSecretMaskError as AnsibleSecretMaskError
from .masking import NewSecretTracker as NewSecretTracker
from .masking import SecretMasker as SecretMasker
from .masking import SecretMatcher as SecretMatcher
from .masking import mask as mask
from .masking import mask_object as mask_object
from .masking import mask_secrets as mask_secrets
from .masking import register_secret as register_secret
from .masking import register_secrets as register_secrets

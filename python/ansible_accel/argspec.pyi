import typing as t

from ansible.module_utils.common.arg_spec import ValidationResult

def validate(
    argument_spec: t.Mapping[str, t.Any],
    parameters: t.Mapping[str, t.Any],
    *,
    mutually_exclusive: t.Sequence[t.Sequence[str]] | None = None,
    required_together: t.Sequence[t.Sequence[str]] | None = None,
    required_one_of: t.Sequence[t.Sequence[str]] | None = None,
    required_if: t.Sequence[t.Sequence[t.Any]] | None = None,
    required_by: t.Mapping[str, t.Any] | None = None,
) -> ValidationResult: ...

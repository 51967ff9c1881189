"""The smq test suite. A package, so `tests.support` is ours and not the `tests` package that
smdebug-rulesconfig (a SageMaker SDK dependency) installs into site-packages."""

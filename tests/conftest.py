"""What every test shares: Hypothesis without wall-clock limits.

A property test's examples must pass on a busy machine (a laptop at load 5-30 runs them several times slower), so
no example has a deadline and slow data generation is no failure; each test's own ``@settings`` still sets its
examples and derandomization.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("busy-machine")

"""One scrape of a Prometheus ``/metrics`` target: fetch with bounds, parse, filter, bound.

The ``openmetrics`` source reads one target per step. The target is not ours: it may be
down, slow, huge or broken, and none of that may stop the agent. So every way a scrape can
go wrong ends here as a one-line error (:class:`Scrape` with ``samples=None``), and every
resource a target could make us spend has a bound (:class:`ScrapeLimits`): one deadline for
the whole scrape, including a target that trickles bytes; the bytes read; the samples kept;
the length of one sample's labels.

The text is parsed by ``prometheus_client``'s parser, never by hand. Samples are keyed by
their name and a canonical text of their labels, the same text for the same labels however
the target ordered them, so that a step can be compared with the last one. The fetch
itself, its bounds and its errors, are in ``scrape_fetch.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from collection_manager.config.errors import ConfigError
from collection_manager.config.settings import redact_url
from producers.sources.scrape_fetch import ScrapeError, ScrapeLimits, fetch, reason_text

logger = logging.getLogger(__name__)

SampleKey = tuple[str, str]
"""A sample's name (``x_total``, ``h_bucket``) and its :func:`canonical_labels` text."""

_ERROR_CHARS = 200
# A label name that the exposition format writes bare; any other is written quoted.
_BARE_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclasses.dataclass(frozen=True)
class Filters:
    """Which metric families a scrape keeps.

    A pattern is matched against the family's name as the parser gives it and, for a
    counter, also that name with ``_total`` (the parser strips it, but it is the name in the
    ``# TYPE`` line), so ``http_requests_total`` and ``http_requests`` both select it.

    Attributes:
        include: empty: every family; else a family is kept when one fullmatches its name.
        exclude: a family that one fullmatches is dropped, even when included.
    """

    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, include: Sequence[str], exclude: Sequence[str]) -> Filters:
        """Compiles the patterns.

        Raises:
            ConfigError: naming a pattern that is no regular expression, with ``re``'s reason.
        """
        return cls(_compile("include", include), _compile("exclude", exclude))

    def keeps(self, family: Metric) -> bool:
        """Whether ``family``'s samples are kept."""
        names = _family_names(family)
        if any(p.fullmatch(n) for p in self.exclude for n in names):
            return False
        return not self.include or any(p.fullmatch(n) for p in self.include for n in names)


def _compile(kind: str, patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                f"{kind} pattern {pattern!r} is not a valid regular expression: {exc}"
            ) from None
    return tuple(compiled)


def _family_names(family: Metric) -> tuple[str, ...]:
    if family.type == "counter":
        return (family.name, family.name + "_total")
    return (family.name,)


@dataclasses.dataclass(frozen=True)
class Scrape:
    """The outcome of one scrape.

    Attributes:
        samples: value by sample key; None when the scrape failed.
        error: one line naming what went wrong; None when the scrape succeeded.
        duration_ms: how long the scrape took, failed or not.
        non_finite: samples dropped because their value is NaN or +-Inf: they cannot be
            stored (NaN != NaN, so a row holding it could never be retracted).
    """

    samples: dict[SampleKey, float] | None
    error: str | None
    duration_ms: int
    non_finite: int = 0


def _escape(text: str) -> str:
    # The exposition format's escapes, backslash first so that the others are not doubled.
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_name(name: str) -> str:
    return name if _BARE_LABEL_NAME.fullmatch(name) else f'"{_escape(name)}"'


def canonical_labels(labels: Mapping[str, str]) -> str:
    """The labels as one text: the same for the same labels, different for different ones.

    Sorted by name, ``name="value"`` joined by ``,``, values escaped as the exposition format
    does (backslash, double quote, newline). A name that cannot be written bare is quoted and
    escaped too, as the UTF-8 exposition format does, so that no two label sets collide.

    Args:
        labels: label name -> value.

    Returns:
        E.g. ``a="1",le="+Inf"``; ``""`` for no labels.
    """
    return ",".join(
        f'{_label_name(name)}="{_escape(value)}"' for name, value in sorted(labels.items())
    )


def parse(text: str, filters: Filters, limits: ScrapeLimits) -> tuple[dict[SampleKey, float], int]:
    """The samples of the families that ``filters`` keeps.

    A sample whose value is NaN or +-Inf is dropped and counted; of two samples with the
    same key, the last one wins.

    Args:
        text: exposition text.
        filters: the families kept.
        limits: ``max_samples`` and ``max_labels_chars``.

    Returns:
        The samples by key, and how many were dropped as not finite.

    Raises:
        ScrapeError: when the text is malformed, when more than ``limits.max_samples`` are
            kept (found as soon as one more is), or when a sample's label text is longer
            than ``limits.max_labels_chars``.
    """
    samples: dict[SampleKey, float] = {}
    non_finite = 0
    for family in _families(text):
        if not filters.keeps(family):
            continue
        for sample in family.samples:
            value = _finite(sample.value)
            if value is None:
                non_finite += 1
                continue
            samples[(sample.name, _labels_text(sample.name, sample.labels, limits))] = value
            if len(samples) > limits.max_samples:
                raise ScrapeError(
                    f"at least {len(samples):,} samples after the filters: over the bound "
                    f"of {limits.max_samples:,} samples (--max-samples)"
                )
    return samples, non_finite


def _families(text: str) -> Iterator[Metric]:
    families = iter(text_string_to_metric_families(text))
    while True:
        try:
            family = next(families)
        except StopIteration:
            return
        except Exception as exc:  # the parser is lax: ValueError mostly, IndexError, ...
            why = _one_line(f"malformed exposition text: {reason_text(exc)}")
            raise ScrapeError(_truncate(why)) from exc
        yield family


def _finite(value: float) -> float | None:
    try:
        number = float(value)
    except OverflowError:  # an integer literal too large for a float: +-Inf, in effect
        return None
    return number if math.isfinite(number) else None


def _labels_text(name: str, labels: Mapping[str, str], limits: ScrapeLimits) -> str:
    text = canonical_labels(labels)
    if len(text) > limits.max_labels_chars:
        raise ScrapeError(
            f"sample {_truncate(name)} has labels of {len(text):,} characters: over the "
            f"bound of {limits.max_labels_chars:,} characters (--max-labels-chars)"
        )
    return text


def scrape(
    url: str,
    filters: Filters,
    limits: ScrapeLimits,
    monotonic: Callable[[], float] = time.monotonic,
) -> Scrape:
    """Fetches and parses one scrape of ``url``; never raises for a bad target.

    A bad target is weather: whatever goes wrong on its side, down, slow, huge, broken, or
    an error nobody foresaw, becomes a failed :class:`Scrape` naming it, never an exception
    that would stop the agent.

    Args:
        url: the target (see :func:`check_target`).
        filters: the families kept.
        limits: the bounds of the scrape.
        monotonic: the clock of the deadline and the duration; tests pass a scripted one.

    Returns:
        The samples, or ``samples=None`` and the error.
    """
    start = monotonic()
    try:
        samples, non_finite = parse(fetch(url, limits, monotonic), filters, limits)
    except ScrapeError as exc:
        return Scrape(None, _one_line(str(exc)), _ms_since(start, monotonic))
    except Exception as exc:
        logger.debug("unforeseen error scraping %s", redact_url(url), exc_info=True)
        error = _truncate(_one_line(f"unforeseen {type(exc).__name__}: {exc}"))
        return Scrape(None, error, _ms_since(start, monotonic))
    return Scrape(samples, None, _ms_since(start, monotonic), non_finite)


def _ms_since(start: float, monotonic: Callable[[], float]) -> int:
    return round((monotonic() - start) * 1000)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _truncate(text: str) -> str:
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"

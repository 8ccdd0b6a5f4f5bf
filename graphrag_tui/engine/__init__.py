"""The headless core of global search (SPEC §3): plan, Map, Reduce, events, the result.

It knows nothing of stores, models, the app or the command line: a model comes in through
the port in `ports.py`, communities as `CommunityContext`, and everything goes out as
events and a `SearchResult`. The names below are its public API; the faces import them
from here.
"""

from ..arguments import ascii_integer, flag, has_surrogates, shown
from .batcher import MapBatch, PartRef
from .corpus import Claim, CommunityContext, Excerpt, MapTextParts
from .events import (
    AnswerDelta,
    AttemptFailed,
    BatchFailed,
    BatchStarted,
    BatchSucceeded,
    CommunityRated,
    ConcurrencyChanged,
    Event,
    Finished,
    Planned,
    RateLimited,
    ReduceCandidateDecided,
    ReduceStarted,
    RequestAdapted,
    RetryWaiting,
    SelectionFinished,
    UsageReported,
)
from .failures import failed_batch_lines
from .maptext import claim_lines, excerpt_line, map_text
from .options import (
    FALLBACK_DEFAULTS,
    MAX_CONCURRENCY,
    SearchOptions,
    form_text,
    parse_option,
    resolve_options,
)
from .plan import SearchPlan, draw_seed, plan_search
from .ports import (
    ChatMessage,
    ChatModel,
    ChatReply,
    ChatRequest,
    ErrorKind,
    ModelError,
    RateWaitSource,
    Stage,
    TextCallback,
)
from .prompts import (
    DEFAULT_PROMPTS,
    DEFAULT_RESPONSE_TYPE,
    DEFAULT_TEMPLATES,
    TEMPLATE_SPECS,
    Prompts,
    check_prompts,
    map_messages,
    prompt_text,
    reduce_messages,
)
from .rate_limits import DEFAULT_MAX_RATE_WAIT, RateLimits, parse_max_rate_wait, parse_per_minute
from .reply_schemas import MAP_REPLY_SCHEMA, REDUCE_REPLY_SCHEMA
from .request import check_level, choose_namespace, normalize_query, parse_level, parse_seed
from .result import (
    RAW_RESPONSE_CAP,
    Attempt,
    BatchResult,
    Decision,
    Level,
    ReduceCandidate,
    ReduceReport,
    SearchResult,
    SelectedAnswer,
    Status,
)
from .retry import LongResponseHook
from .search import GlobalSearch, count_paid, utc_now
from .usage import Cost, Prices, Usage, UsageMeter, cost_of, estimated_input_cost

__all__ = [
    # the run
    "GlobalSearch",
    "count_paid",
    "LongResponseHook",
    "SearchPlan",
    "draw_seed",
    "plan_search",
    "utc_now",
    # rate limits
    "DEFAULT_MAX_RATE_WAIT",
    "RateLimits",
    "parse_max_rate_wait",
    "parse_per_minute",
    # inputs
    "Claim",
    "CommunityContext",
    "Excerpt",
    "FALLBACK_DEFAULTS",
    "Level",
    "MAX_CONCURRENCY",
    "MapBatch",
    "MapTextParts",
    "PartRef",
    "SearchOptions",
    "ascii_integer",
    "check_level",
    "choose_namespace",
    "claim_lines",
    "excerpt_line",
    "flag",
    "has_surrogates",
    "map_text",
    "normalize_query",
    "parse_level",
    "parse_option",
    "parse_seed",
    "resolve_options",
    "shown",
    # the model port
    "ChatMessage",
    "ChatModel",
    "ChatReply",
    "TextCallback",
    "ChatRequest",
    "ErrorKind",
    "MAP_REPLY_SCHEMA",
    "ModelError",
    "REDUCE_REPLY_SCHEMA",
    "RateWaitSource",
    "Stage",
    "map_messages",
    "prompt_text",
    "reduce_messages",
    # prompts
    "DEFAULT_PROMPTS",
    "DEFAULT_RESPONSE_TYPE",
    "DEFAULT_TEMPLATES",
    "Prompts",
    "TEMPLATE_SPECS",
    "check_prompts",
    "form_text",
    # events
    "AnswerDelta",
    "AttemptFailed",
    "BatchFailed",
    "BatchStarted",
    "BatchSucceeded",
    "CommunityRated",
    "ConcurrencyChanged",
    "Event",
    "Finished",
    "Planned",
    "RateLimited",
    "ReduceCandidateDecided",
    "ReduceStarted",
    "RequestAdapted",
    "RetryWaiting",
    "SelectionFinished",
    "UsageReported",
    # the result
    "Attempt",
    "BatchResult",
    "Decision",
    "RAW_RESPONSE_CAP",
    "ReduceCandidate",
    "ReduceReport",
    "SearchResult",
    "SelectedAnswer",
    "Status",
    "failed_batch_lines",
    # usage and cost
    "Cost",
    "Prices",
    "Usage",
    "UsageMeter",
    "cost_of",
    "estimated_input_cost",
]

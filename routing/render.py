"""Word a validated contract as a request: a deterministic template by default, an LLM optionally.

The LLM only rephrases the template text; its reply is checked like any other wording (the
Validator's wording check), and a rejected reply leaves the template wording in place.
"""
from __future__ import annotations

import random

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import Field

from dibench.core.errors import ExtractionError
from dibench.routing.describe import describe
from dibench.routing.errors import ContractInvalid
from dibench.routing.models import Contract, Strict
from dibench.routing.validate import Validator
from dibench.routing.view import CatalogView
from dibench.stores.llm import ask_structured

TEMPLATE_VERSION = "template/v5"

# A request carries what is asked and nothing derived from the gold SQL: no topic line of the gold
# tables, no numbering, no count of sources, no binding column. Its layout (how many sentences, how
# many joining words) is drawn independently of how many asks it holds and of its behaviour: a
# single question may come with an opening remark and a closing, several asks may share one
# sentence. An exploratory request also asks, in words, for the few sources that cover what it
# describes (by the data's columns, never the catalog's labels), anywhere among its asks: what it
# asks differs, not its layout.
COVER_ASKS = ("Which sources, taken together, hold {caps}, with as few of them as possible?",
              "Find the smallest set of sources that between them hold {caps}.",
              "I need as few sources as possible that together record {caps}.",
              "Point me to a minimal set of sources holding {caps}.")
# joining two asks inside one sentence, with no word or with one (never a dash: "... than 200 -
# what are ..." fuses two questions; a semicolon would end a sentence for a layout reader, and
# the number of sentences is drawn apart from the number of asks)
INNER_BARE = (", ",)
INNER_WORD = (", and ", ", also ")
LIST_END = ", and "  # "a, b, and c": the last of three or more asks in one sentence (never a run of bare commas)
# the sentences around the asks carry no word a catalog search could match: at most one opening
# remark and one closing (never two closings in a row); some carry a joining word
OPENINGS_BARE = ("Hi.", "Hi there.", "Please help.")
OPENINGS_WORD = ("Hello, and thanks for your help.", "Hi there, and thanks so much.")
CLOSINGS_BARE = ("Thanks.", "That is all I need.", "Thanks in advance.")
CLOSINGS_WORD = ("Thanks, and have a good day.", "Many thanks, and kind regards.")  # one closing each
AROUND = {("opening", False): OPENINGS_BARE, ("opening", True): OPENINGS_WORD,
          ("closing", False): CLOSINGS_BARE, ("closing", True): CLOSINGS_WORD}
LOWER_STARTS = frozenset("what which how who whom whose when where why list show find give return count tell "
                         "is are was were do does did can name point sort describe compute please for in among "
                         "on of what's".split())
SENTENCES = (1, 2, 3)  # sentences of a request's layout, whatever it asks (up to four asks each)
MAX_ASKS_PER_SENTENCE = 4  # "a, b, c, and d" reads as a list; five or more in one sentence run on
JOINING_WORDS = (0, 1, 2)  # joining words the layout adds, whatever it asks
TURN_ATTEMPTS = 20  # draws of the breaks at a change of mood before any break that fits will do


def _clause(text: str) -> str:
    return " ".join(text.split()).rstrip(".?! ")  # a released question's double space goes too


def _mark(text: str) -> str:
    """The ask's own end mark (a question stays a question)."""
    return "?" if text.strip().endswith("?") else "."


def _sentence(asks: list[str], joiners: list[str]) -> str:
    """The asks as one sentence; three or more are a list whose last item comes after "and"."""
    out = ""
    for i, ask in enumerate(asks):
        clause = _clause(ask)
        if i:
            joiner = joiners.pop()
            out += LIST_END if len(asks) > 2 and i == len(asks) - 1 else joiner
            first = clause.split(" ", 1)[0]
            if first.lower() in LOWER_STARTS:  # "..., and which ..." (never a name)
                clause = first.lower() + clause[len(first):]
        out += clause
    return out[0].upper() + out[1:] + _mark(asks[-1])


def laid_out(asks: list[str], rng: random.Random) -> str:
    """The asks as running text in a layout drawn apart from them: a number of sentences from
    SENTENCES (more when the asks would fill one with more than MAX_ASKS_PER_SENTENCE) and of joining
    words from JOINING_WORDS; the asks are split over as many sentences as
    there are asks, the other sentences (at most two) are an opening remark and a closing, and the
    joining words go between asks or into those as far as there is room."""
    sentences, words_wanted = rng.choice(SENTENCES), rng.choice(JOINING_WORDS)
    groups = max(min(sentences, len(asks)), -(-len(asks) // MAX_ASKS_PER_SENTENCE))
    sentences = max(sentences, groups)
    # Sentence breaks go first where a question meets an instruction: "How many people live in
    # Gelderland, return the country name" runs on, and "What grade is Kyle in, and list ..." loses
    # its question mark. How many breaks there are is drawn above, whatever the asks.
    turns = [i for i in range(1, len(asks)) if _mark(asks[i - 1]) != _mark(asks[i])]
    attempt = 0
    while True:  # a cut leaving no sentence with more than MAX_ASKS_PER_SENTENCE asks
        first = rng.sample(turns, min(groups - 1, len(turns))) if attempt < TURN_ATTEMPTS else []
        rest = [i for i in range(1, len(asks)) if i not in first]
        cuts = sorted(first + rng.sample(rest, groups - 1 - len(first))) if groups > 1 else []
        if max(b - a for a, b in zip([0, *cuts], [*cuts, len(asks)])) <= MAX_ASKS_PER_SENTENCE:
            break
        attempt += 1
    inner = len(asks) - groups
    with_word = min(words_wanted, inner)
    joiners = [rng.choice(INNER_WORD) for _ in range(with_word)] + [rng.choice(INNER_BARE)
                                                                   for _ in range(inner - with_word)]
    rng.shuffle(joiners)
    bounds = [0, *cuts, len(asks)]
    parts = [_sentence(asks[a:b], joiners) for a, b in zip(bounds, bounds[1:])]
    extra = sentences - groups  # 0, 1 or 2: an opening remark, a closing, or both
    kinds = ["opening", "closing"] if extra == 2 else rng.sample(["opening", "closing"], extra)
    worded = set(rng.sample(kinds, min(words_wanted - with_word, extra)))
    around = {k: rng.choice(AROUND[k, k in worded]) for k in kinds}
    return " ".join(filter(None, [around.get("opening"), *parts, around.get("closing")]))


def template_request(c: Contract, view: CatalogView | None = None) -> str:
    """The request of c, worded from seeded random choices (the same contract always reads the same).
    An exploratory contract needs the catalog view: its capabilities are described by their columns."""
    rng = random.Random(f"{c.seed}:{c.task_id}:wording")
    units = c.branches[0].units
    intents = [u.intent for u in units]
    if c.behaviour == "interactive":
        intents = intents[:1]  # both readings ask the same question
    elif c.behaviour != "sequential":
        rng.shuffle(intents)  # independent asks: their order is free; a sequential chain keeps its order
    if c.behaviour == "exploratory":  # the cover ask goes anywhere among the asks, laid out like any other
        caps = describe(c, view, rng) if view is not None else None
        if caps is None:
            raise ContractInvalid(c.task_id, "wording", "no description of its capabilities keeps the cover unique")
        rng.shuffle(caps)
        intents.insert(rng.randint(0, len(intents)), rng.choice(COVER_ASKS).format(caps=", ".join(caps)))
    return laid_out(intents, rng)


class RenderedRequest(Strict):
    request: str = Field(min_length=1)


_SYSTEM = ("You rephrase a data request so it reads like a business user wrote it. Keep every piece of "
           "information it asks for, add none, name no database, and do not add any value that is not in it. "
           'Reply with one JSON object: {"request": "..."}.')


def render(c: Contract, validator: Validator, llm: BaseChatModel | None = None) -> Contract:
    """A copy of c with `request` and `renderer` set; the template wording if the LLM's is rejected."""
    text = template_request(c, validator.view)
    worded = c.model_copy(update={"request": text, "renderer": TEMPLATE_VERSION})
    validator.validate_wording(worded)
    if llm is None:
        return worded
    try:
        reply = ask_structured(llm, _SYSTEM, text, RenderedRequest, where=f"routing request {c.task_id}")
        candidate = c.model_copy(update={"request": reply.request.strip(), "renderer": f"llm:{type(llm).__name__}"})
        validator.validate_wording(candidate)
        return candidate
    except (ExtractionError, ContractInvalid) as exc:
        return worded.model_copy(update={"renderer": f"{TEMPLATE_VERSION} (llm wording rejected: {exc})"})

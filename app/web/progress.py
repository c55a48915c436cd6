"""A student's attempt at a bank: its questions, its variant seed and every try, all in the database; the signed
session cookie holds only the attempt's id, so nothing that decides a grade is readable in the browser.

A page grades the stored tries against the key as it is now for its verdict and feedback, and shows the score
as stored (what the report and an LMS hold, until `flask regrade` changes it), so it shows the same result on
reload, after the back button, or after a double submit (the first try of each number stands, even across app
servers). The bank's feedback
mode decides how many tries a question takes, what they score, and when the key may be shown. Its assessment
settings decide the order (shuffle, drawn from the attempt's seed), when answers are taken (opens/closes, the time
limit from the attempt's started_at) and how many attempts a browser session may start (an LMS launch's: its
user's, per link, with the link's settings; see app.lti.settings).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import g, session, url_for

from .. import db
from ..bank.schema import Bank, Question
from ..bank.variants import MAX_SEED, PLACEHOLDER, has_params, instantiate
from ..errors import AppError, BadInput, NotFound
from ..grading import Answer, Grade, grade, key_version, parse_answer
from ..lti import on_attempt_finished, with_settings
from .limits import charge_attempt_start, session_map

MAX_DISPLAY_NAME = 80
ATTEMPT_ID = re.compile(r"[0-9a-f]{32}")  # secrets.token_hex(16), as create makes them
MAX_EARLIER = 5  # the earlier attempts at a bank that a session lists (their ids ride in the session cookie)
MAX_EARLIER_IDS = 20  # and at all banks together: 0.7 kB of the cookie


class NoTriesLeft(AppError):
    """An answer to a question its attempt has closed (answered, or out of tries): refused, nothing stored."""

    status = 400
    title = "No tries left"


class NotOpenYet(AppError):
    status = 403
    title = "Not open yet"


class QuizClosed(AppError):
    status = 403
    title = "Quiz closed"


class TimeUp(AppError):
    """An answer after the attempt's time limit: refused, and the attempt closed with the answers it has."""

    status = 409
    title = "Time is up"


class NoAttemptsLeft(AppError):
    status = 403
    title = "No attempts left"


class AttemptFinished(AppError):
    """An answer to a question a finished attempt left open (the bank gained it since, or time ran out): refused,
    since the attempt's score is recorded (and may be in an LMS's grade book)."""

    status = 409
    title = "Attempt finished"


class AlreadyTried(AppError):
    """This try number is already stored (a double submit, another tab): the first one stands."""

    status = 400
    title = "Already answered"


def storable(char: str) -> bool:
    """False for a control character (a NUL, which PostgreSQL cannot store, among them) and a lone surrogate
    (which JSON can carry and no database can store)."""
    return unicodedata.category(char) not in ("Cc", "Cs")


def single_line(raw: str) -> str:
    """`raw` trimmed, on one line, the characters that are not `storable` read as spaces."""
    return " ".join("".join(char if storable(char) else " " for char in raw).split())


def clean_display_name(raw: str) -> str | None:
    """An optional name for the instructor's results: a single line, bounded. Empty means anonymous."""
    name = single_line(raw)
    if len(name) > MAX_DISPLAY_NAME:
        raise BadInput(f"A display name may be at most {MAX_DISPLAY_NAME} characters.")
    return name or None


# --- the bank's feedback mode ----------------------------------------------------------------------------


def tries_allowed(bank: Bank) -> int:
    return bank.tries if bank.feedback == "try_again" else 1


def factor(bank: Bank, number: int) -> float:
    """What try `number` (1, 2, ...) of a question is worth: penalty[number - 1] under try_again, else 1."""
    if bank.feedback != "try_again":
        return 1.0
    return bank.penalty[min(number, len(bank.penalty)) - 1]  # past the end only if the bank lost tries since


def penalised(bank: Bank, scores: dict[int, float]) -> float:
    """A question's score from its tries' own scores (try number -> score): the best of score_k × penalty_k
    (try_again), so a later try never lowers what an earlier one earned; otherwise the one try's score."""
    return round(max((score * factor(bank, k) for k, score in scores.items()), default=0.0), 6)


@dataclass(frozen=True)
class Try:
    number: int
    answer: Answer
    grade: Grade  # this try's own grade against the key as it is now, before any penalty
    recorded: float  # its score as stored: as graded when it was given, or as `flask regrade` set it


class Attempt:
    """One attempt with its stored tries, read once; every question argument is the bank's template."""

    def __init__(self, bank: Bank, state: db.AttemptState):
        self.bank, self.row = bank, state.row
        self.id, self.seed = state.row.id, state.row.seed
        self.missed_only = state.row.question_ids is not None
        # The questions it started with (one the bank gained since is not in it, one it lost is gone from it); an
        # attempt from before the app stored them has the bank's.
        fixed = state.row.questions or state.row.question_ids
        own = set(json.loads(fixed)) if fixed else None
        self.questions = [q for q in bank.questions if own is None or q.id in own]
        if bank.shuffle is not None and bank.shuffle.questions:
            self.questions = _shuffled(self.questions, self.seed, "questions")
        self._stored = state.tries
        self.in_course, self.graded = state.in_course, state.graded  # see db.AttemptState

    @property
    def deadline(self) -> datetime | None:
        """When the bank's time limit ends this attempt: started_at (as stored) + time_limit."""
        if self.bank.time_limit is None:
            return None
        return self.started + timedelta(seconds=self.bank.time_limit)

    @property
    def started(self) -> datetime:
        return db.as_utc(self.row.started_at)

    @property
    def total(self) -> float:
        """The attempt's score so far: its closed questions' recorded scores (out of len(questions))."""
        return sum(self.scores().values())

    def time_over(self) -> bool:
        return self.deadline is not None and db.now() >= self.deadline

    @property
    def finished(self) -> bool:
        return self.row.finished_at is not None

    def includes(self, question: Question) -> bool:
        return any(q.id == question.id for q in self.questions)

    def variant(self, question: Question) -> Question:
        """The concrete question this attempt sees (parameterised questions get their own numbers; under
        shuffle.options, choice questions their own option order, with the same ids, so scoring is unchanged)."""
        concrete = instantiate(question, self.seed)
        if (self.bank.shuffle is not None and self.bank.shuffle.options
                and concrete.type in ("single_choice", "multiple_choice")):  # true/false keeps its natural order
            concrete = concrete.model_copy(update={"options": _shuffled(concrete.options, self.seed, concrete.id)})
        return concrete

    def tries_used(self, question: Question) -> int:
        return max((t.number for t in self._stored.get(question.id, [])), default=0)

    def closed(self, question: Question) -> bool:
        """A final try is stored: a right answer, the last try allowed, or the one try of other modes."""
        return any(t.final for t in self._stored.get(question.id, []))

    def tries(self, question: Question) -> list[Try]:
        """The stored tries that still fit the question as it is now (an edited bank drops stale ones)."""
        concrete, valid = self.variant(question), []
        for stored in self._stored.get(question.id, []):
            try:
                answer = parse_answer(concrete, stored.answer)
            except BadInput:
                continue
            valid.append(Try(stored.number, answer, grade(concrete, answer), stored.score))
        return valid

    def result(self, question: Question) -> Grade | None:
        """A closed question's grade: its last try's verdict and feedback against the key as it is now, with the
        score as recorded (the penalty schedule over every try's stored score). So a key edited since shows the
        right answer, but the score is the one in the grade book and the LMS until `flask regrade` changes it,
        which by default never lowers it."""
        if not self.closed(question):
            return None
        tried = self.tries(question)
        if not tried or tried[-1].number != self.tries_used(question):
            return None  # the bank changed since: the final answer no longer fits the question
        return dataclasses.replace(tried[-1].grade, score=self.recorded(question),
                                   graded=penalised(self.bank, {t.number: t.grade.score for t in tried}))

    def recorded(self, question: Question) -> float | None:
        """A closed question's score as stored (the penalty schedule over its tries' stored scores: what the report
        and an LMS hold), also when the bank has changed so that its answer no longer fits; None while it is open."""
        if not self.closed(question):
            return None
        return penalised(self.bank, {t.number: t.score for t in self._stored.get(question.id, [])})

    def best_try(self, question: Question) -> int:
        """The number of the try whose stored score, after its penalty, is the question's score (the first of
        equals); the pages show the last try's answer, and say so when this one differs."""
        stored = self._stored.get(question.id, [])
        return max(stored, key=lambda t: (t.score * factor(self.bank, t.number), -t.number)).number if stored else 0

    def scores(self) -> dict[str, float]:
        """Each closed question's recorded score: the attempt's total is their sum."""
        return {q.id: self.recorded(q) for q in self.questions if self.closed(q)}

    def reveals(self, question: Question) -> bool:
        """Whether the key, the explanation and the visual of a closed question may be shown now."""
        return self.closed(question) and (self.bank.feedback != "deferred" or self.finished)

    def closed_ids(self) -> set[str]:
        return {q.id for q in self.questions if self.closed(q)}

    def results(self) -> dict[str, Grade]:
        found = {q.id: self.result(q) for q in self.questions}
        return {question_id: result for question_id, result in found.items() if result is not None}

    def missed(self) -> list[Question]:
        """The questions to practise again, in the attempt's order: those answered wrongly or partly (a recorded
        score below 1, and not right under the key as it is now), and those a finished attempt left unanswered."""
        found, scores = self.results(), self.scores()
        return [q for q in self.questions
                if (q.id in scores and scores[q.id] < 1 and not (q.id in found and found[q.id].correct))
                or (q.id not in scores and self.finished)]


@dataclass(frozen=True)
class Outcome:
    """What a try left behind: its number, its own grade, and whether it closed the question."""

    number: int
    grade: Grade
    final: bool


def submit(attempt: Attempt, question: Question, answer: Answer, try_number: int | None = None) -> Outcome:
    """Grade and store the next try at `question` (a template of attempt's bank); `try_number`, when the client
    says which try it sends, must be that next one. NoTriesLeft if the question is closed, AlreadyTried if
    that try is already stored, BadInput for any other number."""
    bank, allowed = attempt.bank, tries_allowed(attempt.bank)
    check_open(bank)
    check_time(attempt)
    if attempt.closed(question):
        raise NoTriesLeft(f"This question is finished: {_closed_reason(attempt, question)}. Nothing was stored.")
    check_not_finished(attempt)  # a question the bank gained after the attempt finished
    number = attempt.tries_used(question) + 1
    if try_number is not None and try_number != number:
        if try_number < number:
            raise AlreadyTried(f"Try {try_number} at this question was already stored; the first one stands.")
        raise BadInput(f"The next try at this question is try {number} of {allowed}, not try {try_number}.")
    concrete = attempt.variant(question)
    result = grade(concrete, answer)
    final = result.correct or number >= allowed
    scores = {t.number: t.recorded for t in attempt.tries(question)} | {number: result.score}
    final_score = penalised(bank, scores) if final else 0.0
    misconception = result.misconception.id if result.misconception is not None else None
    _forget()
    stored = db.record_try(attempt.id, bank.id, question.id, number, answer, result.score, final=final,
                           final_score=final_score, seed=attempt.seed, misconception=misconception,
                           question_ids=[q.id for q in attempt.questions], graded_as=key_version(bank, question))
    if not stored:  # another tab or server stored this try number first
        raise AlreadyTried(f"Try {number} at this question was already stored; the first one stands.")
    if stored.finished:
        on_attempt_finished(attempt.id)  # an LMS launch's attempt: its grade goes to the LMS's grade book
    return Outcome(number, result, final)


def _closed_reason(attempt: Attempt, question: Question) -> str:
    tried = attempt.tries(question)
    if tried and tried[-1].grade.correct and attempt.reveals(question):  # deferred: not even that
        return "it was answered right"
    used, allowed = attempt.tries_used(question), tries_allowed(attempt.bank)
    return f"all {allowed} tries were used" if allowed > 1 and used >= allowed else "it was already answered"


# --- the bank's assessment settings: order, window, time limit, attempts ------------------------------------


def drawn(bank: Bank, seed: int) -> list[Question]:
    """The questions of a new attempt at the whole bank, in the bank's order: from each pool, the `draw` that come
    first in this seed's order; every question outside a pool."""
    left_out: set[str] = set()
    for pool in bank.pools or ():
        members = [q for q in bank.questions if q.id in pool.questions]
        left_out |= {q.id for q in _shuffled(members, seed, f"pool:{pool.id}")[pool.draw:]}
    return [q for q in bank.questions if q.id not in left_out]


def _shuffled(items: list, seed: int, scope: str) -> list:
    """`items` (questions or options, each with an id) in this seed's order: each sorts by a hash of (seed, scope,
    id), so the order is the same on every reload and server, and an item added to the bank moves no other."""
    return sorted(items, key=lambda item: hashlib.sha256(f"{seed}:{scope}:{item.id}".encode()).digest())


def when(moment: datetime) -> str:
    """A moment as the pages show it, in the time zone it was written in: '2026-03-02 09:00 UTC+01:00' (with its
    seconds when it has any, as a deadline does: never a minute earlier or later than it is)."""
    seconds = f":{moment:%S}" if moment.second else ""
    return f"{moment:%Y-%m-%d %H:%M}{seconds} {moment.tzname()}"


def duration(seconds: int) -> str:
    """1200 -> '20 minutes', 5400 -> '1 h 30 min', 90 -> '1 min 30 s'."""
    hours, minutes, rest = seconds // 3600, seconds % 3600 // 60, seconds % 60
    if not hours and not rest:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return " ".join(f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (rest, "s")) if n)


def window_note(bank: Bank, moment: datetime | None = None) -> str | None:
    """What the start page says about the bank's opens/closes window (None when it has none)."""
    moment = moment or db.now()
    if bank.opens is not None and moment < bank.opens:
        return f"This quiz opens at {when(bank.opens)}; answers are accepted from then on."
    if bank.closes is not None and moment >= bank.closes:
        return f"This quiz closed at {when(bank.closes)}; answers are no longer accepted."
    if bank.closes is not None:
        return f"Answers are accepted until {when(bank.closes)}."
    return None


def check_open(bank: Bank) -> None:
    """NotOpenYet or QuizClosed outside the bank's opens/closes window."""
    moment = db.now()
    if bank.opens is not None and moment < bank.opens:
        raise NotOpenYet(f"The quiz {bank.title!r} opens at {when(bank.opens)}; nothing can be started or answered "
                         "before then. Come back at that time.")
    if bank.closes is not None and moment >= bank.closes:
        raise QuizClosed(f"The quiz {bank.title!r} closed at {when(bank.closes)}, so answers are no longer accepted "
                         "and nothing was stored. Your results so far stay on the quiz's page.")


def check_can_start(bank: Bank) -> None:
    """NoAttemptsLeft once this browser session has started the bank's `attempts:` (counted in its session)."""
    used = session_map("started", int).get(bank.id, 0)
    if bank.attempts is not None and used >= bank.attempts:
        raise NoAttemptsLeft(f"The quiz {bank.title!r} allows {bank.attempts} attempt"
                             f"{'s' if bank.attempts != 1 else ''}, and all of them were started (a retake, and a "
                             "retake of the missed questions, each count as one). Your results stay on the quiz's "
                             "page.")


def count_started(bank: Bank, used: int) -> None:
    """Set how many attempts at `bank` this session has started: an LMS launch counts its user's in that link."""
    session["started"] = {**session_map("started", int), bank.id: used}


def attempts_note(bank: Bank) -> str | None:
    if bank.attempts is None:
        return None
    used = min(session_map("started", int).get(bank.id, 0), bank.attempts)
    return f"You may start {bank.attempts} attempt{'s' if bank.attempts != 1 else ''} at this quiz; {used} used."


def close_if_over(attempt: Attempt) -> bool:
    """Close an attempt whose time is up with the answers it has (unanswered questions count 0); True if over."""
    if not attempt.time_over():
        return False
    if not attempt.finished:
        _forget()
        if db.finish_attempt(attempt.id, [q.id for q in attempt.questions]):
            on_attempt_finished(attempt.id)  # an LMS launch's attempt: its grade goes to the LMS's grade book
    return True


def close_overdue(bank: Bank, limit: int = 500) -> int:
    """Close the attempts at `bank` whose time limit ended while nobody had them open (a student ran out of time
    and left), so the report counts them and an LMS's grade book gets their grades; the number closed. The
    instructor's pages call it before they read, and so does the cron job `flask lti send-grades`."""
    started_before = db.now() - timedelta(seconds=bank.time_limit) if bank.time_limit is not None else None
    closed = 0
    for attempt_id in db.timed_open_attempts(bank.id, started_before, limit):
        attempt = load(bank, attempt_id)
        if attempt is not None and close_if_over(attempt):
            closed += 1
    return closed


def check_time(attempt: Attempt) -> None:
    """TimeUp (the attempt closed) once its time limit has passed."""
    if close_if_over(attempt):
        raise TimeUp(f"The time limit of {duration(attempt.bank.time_limit)} ended at {when(attempt.deadline)}. "
                     "The attempt is closed with the answers given before then, and no answer after it is stored; "
                     "your results are on the quiz's page.")


def check_not_finished(attempt: Attempt) -> None:
    """AttemptFinished once the attempt is finished: its score is recorded, and no answer changes it."""
    if attempt.finished:
        raise AttemptFinished("This attempt is finished and its score is recorded, so no answer can be added to it; "
                              "nothing was stored. Your results are on the quiz's page, and a retake starts a new "
                              "attempt.")


# --- attempts by id (the JSON API) and the session's own ------------------------------------------------


def load(bank: Bank, attempt_id: str) -> Attempt | None:
    """The attempt with this id at this bank (None for an unknown id, or another bank's attempt)."""
    memo = g.setdefault("attempt_states", {})
    state = memo.get(attempt_id)
    if state is None:
        state = memo[attempt_id] = db.attempt_state(attempt_id)
    if state.row is None or state.row.bank_id != bank.id:
        return None
    return Attempt(with_settings(bank, state.link_settings), state)  # an LMS link's attempt: the link's settings


def _forget() -> None:
    g.pop("attempt_states", None)


def create(bank: Bank, display_name: str | None = None, questions: list[Question] | None = None,
           owner=None, practice: bool = False) -> Attempt:
    """A new attempt with a fresh variant seed (whole bank, or only `questions`), under the attempt limit, the
    bank's window and its `attempts:` (counted per browser session); `owner`: see db.start_attempt. A `practice`
    attempt (the missed questions, in a session an LMS opened) is ungraded, so `attempts:` neither limits nor
    counts it: the course's limit is on the attempts its grade book counts."""
    check_open(bank)
    if not practice:
        check_can_start(bank)
    charge_attempt_start()
    attempt_id, seed = secrets.token_hex(16), secrets.randbelow(MAX_SEED)
    _forget()
    db.start_attempt(attempt_id, bank.id, seed, display_name,
                     None if questions is None else [q.id for q in questions], owner,
                     questions=[q.id for q in (drawn(bank, seed) if questions is None else questions)])
    if bank.attempts is not None and not practice:  # counted only where a limit applies: other banks' cookies stay
        started = session_map("started", int)
        session["started"] = {**started, bank.id: started.get(bank.id, 0) + 1}
    return load(bank, attempt_id)


def attempt_id(bank: Bank) -> str | None:
    return session_map("attempts", str).get(bank.id)


def current(bank: Bank) -> Attempt | None:
    """The session's attempt at `bank`, if it has one that is stored."""
    current_id = attempt_id(bank)
    return load(bank, current_id) if current_id else None


def settings(bank: Bank) -> Bank:
    """`bank` as the session's attempt at it sees it: with the settings of its LMS link, if it has one."""
    attempt = current(bank)
    return attempt.bank if attempt is not None else bank


def start(bank: Bank, display_name: str | None = None, questions: list[Question] | None = None,
          owner=None, practice: bool = False) -> Attempt:
    """A new attempt that becomes the session's attempt at `bank` (the old one stays in the database); an `owner`'s
    (an LMS user's) is the session's course attempt too. `practice`: see create."""
    if display_name is None:
        display_name = chosen_name(bank)
    attempt = create(bank, display_name, questions, owner, practice)  # read once, and kept for this request
    _remember(bank, attempt.id, in_course=owner is not None)
    return attempt


def adopt(bank: Bank, attempt_id: str, in_course: bool = False) -> None:
    """Make a stored attempt the session's attempt at `bank` (an LTI launch resuming a learner's attempt, which is
    the session's course attempt: `in_course`)."""
    _forget()
    _remember(bank, attempt_id, in_course)


def _remember(bank: Bank, attempt_id: str, in_course: bool) -> None:
    _keep_as_earlier(bank, except_id=attempt_id)
    session["attempts"] = {**session_map("attempts", str), bank.id: attempt_id}
    if in_course:
        session["lms_attempts"] = {**session_map("lms_attempts", str), bank.id: attempt_id}


def earlier_ids(bank: Bank) -> list[str]:
    """The ids of the session's earlier attempts at `bank`, newest first: those it started, or an LMS opened, before
    its current one (at most MAX_EARLIER)."""
    listed = session_map("earlier", str).get(bank.id, "").split()
    return [earlier_id for earlier_id in listed if ATTEMPT_ID.fullmatch(earlier_id)][:MAX_EARLIER]


def earlier(bank: Bank) -> list[Attempt]:
    """The session's earlier attempts at `bank` that are stored, newest first; one whose time ran out is closed."""
    found = [attempt for attempt in map(lambda earlier_id: load(bank, earlier_id), earlier_ids(bank)) if attempt]
    if any(not attempt.finished and close_if_over(attempt) for attempt in found):
        return earlier(bank)  # read again, as closed
    return found


def _keep_as_earlier(bank: Bank, except_id: str | None = None) -> None:
    """Put the session's current attempt at `bank` first in its list of earlier ones (and take `except_id`, the
    attempt about to become current, off that list)."""
    current_id, before = attempt_id(bank), earlier_ids(bank)
    kept = [earlier_id for earlier_id in before if earlier_id not in (current_id, except_id)]
    if current_id is not None and current_id != except_id:
        kept.insert(0, current_id)
    if kept == before:
        return
    lists = {key: value for key, value in session_map("earlier", str).items() if key != bank.id}
    if kept:
        lists[bank.id] = " ".join(kept[:MAX_EARLIER])  # last: the newest list
    while sum(len(listed.split()) for listed in lists.values()) > MAX_EARLIER_IDS:
        lists.pop(next(iter(lists)))  # the list of the bank left longest ago (a browser drops a cookie over 4 kB)
    session["earlier"] = lists


def course_attempt(bank: Bank) -> Attempt | None:
    """The attempt at `bank` that an LMS launch (or a retake in its course) last opened in this session, if any:
    the quiz's Retake then starts the learner's next attempt in that course (app.lti.views.retake_in_course)."""
    attempt_id = session_map("lms_attempts", str).get(bank.id)
    return load(bank, attempt_id) if attempt_id else None


def ensure(bank: Bank) -> Attempt:
    """The session's attempt at `bank`, started if there is none (or it was lost)."""
    return current(bank) or start(bank)


def set_name(bank: Bank, name: str | None) -> None:
    """The student's name for the instructor: on the session's attempt, and kept in the session for each attempt it
    starts at `bank` (so that saving a name starts no attempt, nor its time limit, and a retake keeps it)."""
    names = {key: value for key, value in session_map("names", str).items() if key != bank.id}
    session["names"] = {**names, bank.id: name} if name else names
    attempt = current(bank)
    if attempt is not None:
        _forget()
        db.set_display_name(attempt.id, name)


def chosen_name(bank: Bank) -> str | None:
    """The name the student saved for `bank` in this session, if any."""
    return session_map("names", str).get(bank.id)


def reset(bank: Bank) -> None:
    """Forget the session's attempt; the next question page starts a new one (with new variants).
    Stored answers are kept."""
    _forget()
    _keep_as_earlier(bank)
    attempts = session_map("attempts", str)
    if bank.id in attempts:
        session["attempts"] = {key: value for key, value in attempts.items() if key != bank.id}


def preview(question: Question) -> Question:
    """A parameterised question before any attempt has drawn its numbers: each {{ ... }} of its prompt as '…'."""
    if not has_params(question):
        return question
    return question.model_copy(update={"prompt": PLACEHOLDER.sub("…", question.prompt)})


def tag_scores(questions: list[Question], scores: dict[str, float]) -> list[tuple[str, float, int]]:
    """(tag, points earned, questions) for each tag of `questions` from each closed question's recorded score
    (Attempt.scores), in order of first use; unanswered count 0."""
    earned: dict[str, float] = {}
    counts: dict[str, int] = {}
    for question in questions:
        for tag in question.tags:
            earned[tag] = earned.get(tag, 0.0) + scores.get(question.id, 0.0)
            counts[tag] = counts.get(tag, 0) + 1
    return [(tag, round(earned[tag], 6), counts[tag]) for tag in earned]


def not_in_attempt(attempt: Attempt, question: Question) -> NotFound:
    pool = attempt.bank.pool_of(question.id)
    drawn_others = pool is not None and any(attempt.includes(q) for q in attempt.bank.questions
                                            if q.id in pool.questions)
    if drawn_others and not attempt.missed_only:
        return NotFound(f"Question {question.id!r} is not part of this attempt: each attempt draws {pool.draw} of "
                        f"{len(pool.questions)} questions like it, and it was not drawn for yours. The quiz's page "
                        "lists your attempt's questions.")
    if attempt.missed_only:
        # A link from an earlier attempt's results page, left open: that attempt's review has the answer.
        answered = next((a for a in earlier(attempt.bank) if a.includes(question) and a.tries(question)), None)
        link = None if answered is None else (
            "Review your answer in your earlier attempt",
            url_for("quiz.earlier_attempt", bank_id=attempt.bank.id, attempt_id=answered.id))
        return NotFound(f"Question {question.id!r} is not part of this attempt, which has only the questions you "
                        "missed. Go back to the quiz's page to see its questions, or retake the whole quiz.", link)
    # Added to the bank since, or moved between pools since (the attempt keeps the questions it began with).
    return NotFound(f"Question {question.id!r} is not part of this attempt: it is not among the questions the attempt "
                    "began with (the quiz gained it, or changed its pools, after the attempt started). Finish the "
                    "attempt, then retake the quiz to answer it.")

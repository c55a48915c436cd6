"""Property-based fuzzing of every form, API and plot parameter: whatever a client sends, the app
answers below 500, and every 4xx carries a sentence that says what to fix (never a traceback).

The app runs with TESTING off (as in production: an unexpected exception becomes a 500 page, which
these tests catch) and generous rate limits (so hypothesis can send hundreds of requests).
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.security import generate_password_hash

from app import create_app
from app.paths import resource_dir
from app.visuals import KINDS, get_kind
from app.web.learn import PAGES
from conftest import SEED_BANK, STRONG_SECRET_KEY, csrf_token
from test_seed import EXPECTED

# A word in a script DejaVu Sans lacks (e.g. Bengali digits) renders as a box and matplotlib warns;
# the page is still served, with the real word in the alt text, so that warning is not a failure here.
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font:UserWarning")

get_kind("soft-lookup")  # loads every kind into KINDS
KIND_NAMES = sorted(KINDS)
INSTRUCTOR_PASSWORD = "fuzz-instructor-password"

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def fuzz(max_examples: int) -> settings:
    return settings(FUZZ, max_examples=max_examples)


# --------------------------------------------------------------------------------------------------
# The app under test, and what every response must look like


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory):
    database = tmp_path_factory.mktemp("fuzz") / "fuzz.sqlite3"
    return create_app({
        "TESTING": False,  # production error handling: an exception is a 500 page, not a propagated error
        "SECRET_KEY": STRONG_SECRET_KEY,
        "QUIZ_DIR": str(resource_dir("quizzes")),
        "DATABASE_URL": f"sqlite:///{database}",
        # Generous limits rather than RATELIMIT_ENABLED=False: the Limiter is one object shared by every app
        # in the process, and its `enabled` flag would stay off for the tests that check the limits.
        "RATE_LIMIT_SUBMIT": "100000 per minute", "RATE_LIMIT_PLOTS": "100000 per minute",
        "RATE_LIMIT_LOGIN": "100000 per minute", "RATE_LIMIT_ATTEMPTS_PER_ADDRESS": "100000 per minute",
        "INSTRUCTOR_PASSWORD_HASH": generate_password_hash(INSTRUCTOR_PASSWORD, method="pbkdf2:sha256:1000"),
    })


@pytest.fixture(scope="module")
def questions(fuzz_app):
    """(bank id, question) for every question the app serves."""
    registry = fuzz_app.extensions["banks"]
    return [(bank.id, q) for bank in registry.banks.values() for q in bank.questions]


@pytest.fixture(scope="module")
def answered_client(fuzz_app):
    """A student who has answered every seed question, so each answer page (with its visual) opens."""
    client = fuzz_app.test_client()
    for question_id, (key, _) in EXPECTED.items():
        values = ["true" if key else "false"] if isinstance(key, bool) else (key if isinstance(key, list) else [key])
        page = client.get(f"/quiz/{SEED_BANK}/{question_id}")
        response = client.post(f"/quiz/{SEED_BANK}/{question_id}",
                               data={"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": values})
        assert response.status_code == 303
    return client


@pytest.fixture(scope="module")
def instructor_client(fuzz_app):
    client = fuzz_app.test_client()
    page = client.get("/instructor/login")
    response = client.post("/instructor/login", data={"csrf_token": csrf_token(page.get_data(as_text=True)),
                                                      "password": INSTRUCTOR_PASSWORD})
    assert response.status_code == 303
    assert client.get("/instructor/").status_code == 200
    return client


# The elements that carry the sentence on an HTML 4xx page: the error page, a re-rendered form, or
# a page whose visual could not use the student's control values.
_SENTENCE_ELEMENT = re.compile(
    r'<p class="(?:error-message|form-error|visual-error)"[^>]*>(.*?)</p>', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def _is_sentence(text: str) -> bool:
    text = " ".join(text.split())
    return len(text.split()) >= 3 and text[-1] in ".!?)"


def error_sentences(response) -> list[str]:
    """The user-facing sentences of a 4xx response (JSON `error.message`, or the page's message)."""
    if response.is_json:
        payload = response.get_json()
        assert set(payload) == {"error"}, payload
        assert payload["error"]["status"] == response.status_code
        return [payload["error"]["message"]]
    body = response.get_data(as_text=True)
    found = [html.unescape(_TAG.sub("", m)) for m in _SENTENCE_ELEMENT.findall(body)]
    return [" ".join(text.split()) for text in found if text.strip()]


def check(response, method: str = "GET", allowed: tuple[int, ...] | None = None) -> None:
    status = response.status_code
    body = response.get_data().decode("utf-8", "replace")  # images too
    context = f"{method} -> {status}: {body[:600]}"
    assert status < 500, context
    assert "Traceback" not in body, context
    if allowed is not None:
        assert status in allowed, context
    if 300 <= status < 400:
        location = urlsplit(response.headers["Location"])
        assert location.netloc in ("", "localhost"), f"redirect off the site: {response.headers['Location']}"
    if 400 <= status < 500 and method != "HEAD":
        sentences = error_sentences(response)
        assert sentences and all(_is_sentence(s) for s in sentences), context


# --------------------------------------------------------------------------------------------------
# Strategies

# Values that have tripped parsers elsewhere: numbers out of float range, unicode digits that
# str.isdigit() accepts but int() refuses, digit strings past Python's 4300-digit limit, NUL, etc.
NASTY_VALUES = [
    "", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400",
    "-1", "0", "-0", "0.5", "1.0", "+1", "0x10", "0o7", "1_000", " 3 ", "3 ", "1e3", "on", "off", "true",
    "false", "null", "None", "[]", "{}", "²", "٣", "Ⅻ", "１２", "\x00", "%", "%00", "'", '"', "<script>",
    "$x$", "\\frac", "9" * 400, "9" * 5000, "-" + "9" * 5000, "a" * 3000, "\u202e", "\ud7ff", "🙂",
]
nasty = st.sampled_from(NASTY_VALUES)
any_text = st.text(max_size=40)
numbers_as_text = st.one_of(st.integers().map(str), st.integers(-10**30, 10**30).map(str),
                            st.floats(allow_nan=True, allow_infinity=True).map(repr))
# Characters str.isdigit() or isnumeric() accepts beyond 0-9 (Arabic-Indic digits, superscripts, ...),
# and digit strings around Python's int() limit of 4300 digits.
unicode_digits = st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=12)
long_digits = st.integers(4000, 6000).map("9".__mul__)
query_value = st.one_of(nasty, any_text, numbers_as_text, unicode_digits, long_digits)
seed_text = st.one_of(nasty, numbers_as_text, unicode_digits, long_digits, st.integers(0, 2**31 - 1).map(str),
                      st.integers(2**31 - 10, 2**31 + 10).map(str))


def query_pairs(names: list[str]):
    """A query string as (name, value) pairs: known and random names, repeated keys allowed."""
    name = st.one_of(st.sampled_from(names), any_text) if names else any_text
    return st.lists(st.tuples(name, query_value), max_size=5)


def path_segment():
    """An id as a client might put it in a URL: unicode, slashes, dots, very long, odd escapes."""
    raw = st.one_of(
        any_text,
        st.sampled_from(["", ".", "..", "/", "//", "a/b", "summary", "answer", "attention-transformers",
                         "head-dimension", "static", "api", "\x00", "%", "~"]),
        st.integers(200, 20000).map(lambda n: "x" * n),
    )
    quoted = st.one_of(raw.map(lambda s: quote(s, safe="")), raw.map(lambda s: quote(s, safe="/")))
    escapes = st.sampled_from(["%ff", "%zz", "%00", "%2e%2e", "%c0%af", "%2F", "%", "%e2%82"])
    return st.one_of(quoted, st.tuples(quoted, escapes).map("".join))


def json_values(max_leaves: int = 12):
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(-10**400, 10**400),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
        st.sampled_from(["true", "false", "32", "keys", "values", "queries", "next-pixel", "nm-d-plus-l"]),
    )
    return st.recursive(scalars, lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)),
        max_leaves=max_leaves)


# --------------------------------------------------------------------------------------------------
# Quiz form POSTs


@st.composite
def form_submissions(draw, questions):
    bank_id, question = draw(st.sampled_from(questions))
    option_ids = [o.id for o in question.options] or ["32"]
    one_value = st.one_of(st.sampled_from(option_ids), st.sampled_from(["true", "false"]), nasty, any_text)
    answers = draw(st.one_of(st.none(), st.lists(one_value, max_size=5)))
    csrf = draw(st.sampled_from(["valid", "valid", "valid", "missing", "forged", "empty", "header-only"]))
    encoding = draw(st.sampled_from(["form", "form", "multipart", "json", "text", "garbage", "none"]))
    extra = draw(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=20), max_size=3))
    return bank_id, question, answers, csrf, encoding, extra


def test_fuzz_quiz_form_posts(fuzz_app, questions):
    @fuzz(150)
    @given(form_submissions(questions))
    def run(case):
        bank_id, question, answers, csrf, encoding, extra = case
        client = fuzz_app.test_client()
        url = f"/quiz/{bank_id}/{question.id}"
        page = client.get(url)
        assert page.status_code == 200
        token = csrf_token(page.get_data(as_text=True))
        fields: dict[str, object] = {k: v for k, v in extra.items() if k not in ("csrf_token", "answer")}
        if answers is not None:
            fields["answer"] = answers
        headers = {}
        if csrf == "valid":
            fields["csrf_token"] = token
        elif csrf == "forged":
            fields["csrf_token"] = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        elif csrf == "empty":
            fields["csrf_token"] = ""
        elif csrf == "header-only":
            headers["X-CSRFToken"] = token
        if encoding == "form":
            response = client.post(url, data=fields, headers=headers)
        elif encoding == "multipart":
            response = client.post(url, data=fields, headers=headers, content_type="multipart/form-data")
        elif encoding == "json":
            response = client.post(url, json=fields, headers=headers)
        elif encoding == "text":
            response = client.post(url, data=urlencode(fields, doseq=True), headers=headers,
                                   content_type="text/plain")
        elif encoding == "garbage":
            response = client.post(url, data=b"\xff\xfe--\x00" + urlencode(fields, doseq=True).encode(),
                                   headers=headers, content_type="multipart/form-data; boundary=x")
        else:
            response = client.post(url, data=urlencode(fields, doseq=True), headers=headers, content_type="")
        check(response, "POST", allowed=(303, 400))
        token_sent = csrf == "header-only" or (csrf == "valid" and encoding in ("form", "multipart"))
        if not token_sent:
            assert response.status_code == 400
            sentence = error_sentences(response)[0]
            # A multipart body whose part has an unreadable name (e.g. a field called "\n") is refused
            # as malformed before its token is looked at; either sentence tells the student what to do.
            assert "security token" in sentence or "NUL character" in sentence or (
                encoding in ("multipart", "garbage") and "no field name" in sentence), sentence
        # An answered question redirects to its answer page; a wrong first try of a question with several tries
        # (a drill's) shows the question again with that try above it (found by hypothesis: "32, 32" on a matrix).
        after = client.get(url)
        tried = re.search(r"Your tr(y|ies) so far", after.get_data(as_text=True)) is not None
        recorded = after.status_code == 303 or tried
        assert recorded == (response.status_code == 303), "a refused submission was recorded, or the reverse"

    run()


def test_an_oversized_form_is_refused_with_a_sentence(fuzz_app):
    client = fuzz_app.test_client()
    url = f"/quiz/{SEED_BANK}/head-dimension"
    token = csrf_token(client.get(url).get_data(as_text=True))
    response = client.post(url, data={"csrf_token": token, "answer": "3" * 70_000})
    check(response, "POST", allowed=(413,))
    response = client.post(url, data={"csrf_token": token, **{f"f{i}": "x" for i in range(5000)}})
    check(response, "POST", allowed=(400, 413))


# --------------------------------------------------------------------------------------------------
# The JSON grade API


def _raw_json_bodies():
    """Bodies json.dumps would never write: deep nesting, huge literals, bad bytes, NaN tokens."""
    depth = st.integers(1, 60_000)
    return st.one_of(
        depth.map(lambda n: "[" * n + "]" * n),
        depth.map(lambda n: '{"answer": ' + "[" * n + "]" * n + "}"),
        depth.map(lambda n: '{"a":' * n + "1" + "}" * n),
        st.integers(1, 6000).map(lambda n: '{"answer": ' + "9" * n + "}"),
        st.integers(1, 6000).map(lambda n: '{"answer": 1, "seed": ' + "9" * n + "}"),
        st.sampled_from([
            '{"answer": NaN}', '{"answer": Infinity}', '{"answer": -Infinity}', '{"answer": 1e999}',
            '{"answer": -1e999}', '{"answer": 1e-999}', '{"answer": 32, "seed": 1.5}', '{"answer": 32, "seed": -1}',
            '{"answer": 32, "seed": "²"}', '{"answer": 32, "seed": "٣"}', '{"answer": 32, "seed": true}',
            '{"answer": 32, "seed": 1e400}', '{"answer": "32", "answer": true}', "", " ", "null", "[]",
            '"answer"', "\ufeff{\"answer\": true}", '{"answer": "\\ud800"}', '{"answer": "\\u0000"}',
            '{"answer": true', "{'answer': true}", '{"answer": [true, ]}', '{"answer": 0x20}',
        ]),
    ).map(lambda text: text.encode("utf-8", "surrogatepass"))


@st.composite
def grade_requests(draw, questions):
    bank_id, question = draw(st.sampled_from(questions))
    target = draw(st.sampled_from(["real", "real", "real", "random"]))
    qid = question.id if target == "real" else draw(path_segment())
    answer = draw(st.one_of(json_values(), st.sampled_from([o.id for o in question.options] or [32]),
                            st.lists(st.sampled_from([o.id for o in question.options] or ["x"]), max_size=4)))
    shape = draw(st.sampled_from(["answer", "answer", "answer+seed", "extra", "bare", "raw", "raw", "binary"]))
    if shape == "answer":
        body = json.dumps({"answer": answer}).encode()
    elif shape == "answer+seed":
        seed = draw(st.one_of(st.integers(), st.integers(-10**400, 10**400), json_values(4), seed_text))
        body = json.dumps({"answer": answer, "seed": seed}).encode()
    elif shape == "extra":
        extra = draw(st.dictionaries(st.text(max_size=10), json_values(4), min_size=1, max_size=3))
        body = json.dumps({"answer": answer, **extra}).encode()
    elif shape == "bare":
        body = json.dumps(answer).encode()
    elif shape == "raw":
        body = draw(_raw_json_bodies())
    else:
        body = draw(st.binary(max_size=200))
    content_type = draw(st.sampled_from([
        "application/json", "application/json", "application/json", "application/json; charset=utf-8",
        "application/json; charset=latin-1", "application/problem+json", "text/plain",
        "application/x-www-form-urlencoded", "multipart/form-data", "", "application/jsonx",
    ]))
    return f"/api/banks/{bank_id}/questions/{qid}/grade", body, content_type, question


def test_fuzz_json_grade_api(fuzz_app, questions):
    client = fuzz_app.test_client()

    @fuzz(150)
    @given(grade_requests(questions))
    def run(case):
        url, body, content_type, question = case
        response = client.post(url, data=body, content_type=content_type)
        check(response, "POST", allowed=(200, 308, 400, 404, 405, 413, 415))
        assert response.is_json or response.status_code == 308, "the API answers JSON (a slash redirect aside)"
        if response.status_code == 200:
            graded = response.get_json()
            assert 0 <= graded["score"] <= 1
            assert graded["correct"] == (graded["score"] == 1)

    run()


def test_api_question_seed_parameter(fuzz_app, questions):
    client = fuzz_app.test_client()

    @fuzz(80)
    @given(st.sampled_from(questions), st.one_of(seed_text, any_text))
    def run(item, seed):
        bank_id, question = item
        response = client.get(f"/api/banks/{bank_id}/questions/{question.id}?" + urlencode({"seed": seed}))
        check(response, allowed=(200, 400))
        valid = bool(re.fullmatch("[0-9]{1,10}", seed)) and int(seed) <= 2**31 - 1
        assert (response.status_code == 200) == valid, seed

    run()


# --------------------------------------------------------------------------------------------------
# Pages with arbitrary bank and question ids


ROUTES = [
    "/quiz/{b}/", "/quiz/{b}/{q}", "/quiz/{b}/{q}/answer", "/quiz/{b}/summary", "/quiz/{b}/retake",
    "/api/banks/{b}", "/api/banks/{b}/questions/{q}", "/api/banks/{b}/questions/{q}/grade", "/learn/{b}",
    "/plots/{b}.{q}", "/plots/{b}.json", "/instructor/banks/{b}", "/instructor/preview/{b}/",
    "/instructor/preview/{b}/{q}", "/instructor/banks/{b}/charts/questions/{q}.png",
    "/instructor/banks/{b}/responses.csv", "/{b}", "/{b}/{q}",
]


def test_fuzz_pages_with_arbitrary_ids(fuzz_app, instructor_client):
    student = fuzz_app.test_client()

    @fuzz(150)
    @given(st.sampled_from(ROUTES), path_segment(), path_segment(), st.sampled_from(["GET", "GET", "HEAD", "POST"]),
           st.booleans())
    def run(route, bank_id, question_id, method, as_instructor):
        client = instructor_client if as_instructor else student
        # A leading "//" would make the test client read a host name; a browser sends such a path as is.
        url = re.sub("^/+", "/", route.format(b=bank_id, q=question_id))
        response = client.open(url, method=method)
        check(response, method)

    run()


# --------------------------------------------------------------------------------------------------
# Plots, learn pages and answer pages with arbitrary visual parameters


def _field_names(kind_name: str) -> list[str]:
    return list(KINDS[kind_name].Params.model_fields)


@pytest.mark.parametrize("kind_name", KIND_NAMES)
def test_fuzz_plot_parameters(fuzz_app, kind_name):
    client = fuzz_app.test_client()
    kind = KINDS[kind_name]
    other = "png" if kind.format == "svg" else "svg"

    @fuzz(50)
    @given(query_pairs(_field_names(kind_name)), st.sampled_from(["json", kind.format, kind.format, other]))
    def run(pairs, ext):
        # Mostly invalid: a valid set of params renders a new figure (~0.5 s), so keep those few.
        response = client.get(f"/plots/{kind_name}.{ext}?" + urlencode(pairs))
        check(response, allowed=(200, 400, 404))
        if response.status_code == 200:
            if ext == "json":
                described = response.get_json()
                assert described["alt"] and described["src"].startswith(f"/plots/{kind_name}.{kind.format}?")
            else:
                assert response.mimetype == ("image/svg+xml" if ext == "svg" else "image/png")
                assert response.data

    run()


def test_fuzz_learn_pages_with_visual_overrides(fuzz_app):
    client = fuzz_app.test_client()
    all_fields = sorted({name for kind in KIND_NAMES for name in _field_names(kind)})

    @fuzz(60)
    @given(st.one_of(st.sampled_from(list(PAGES) + [""]), path_segment()),
           st.one_of(st.sampled_from(KIND_NAMES), any_text), query_pairs(all_fields))
    def run(page, kind_name, pairs):
        response = client.get(f"/learn/{page}?" + urlencode([("v", kind_name), *pairs]))
        check(response, allowed=(200, 308, 400, 404))

    run()


def test_fuzz_answer_page_visual_overrides(answered_client, questions):
    seed_questions = [q for bank_id, q in questions if bank_id == SEED_BANK]

    @fuzz(60)
    @given(st.sampled_from(seed_questions), st.booleans(), st.data())
    def run(question, own_kind, data):
        kind_name = question.visual.kind if own_kind else data.draw(st.one_of(st.sampled_from(KIND_NAMES), any_text))
        names = _field_names(kind_name) if kind_name in KINDS else []
        pairs = data.draw(query_pairs(names))
        response = answered_client.get(f"/quiz/{SEED_BANK}/{question.id}/answer?"
                                       + urlencode([("v", kind_name), *pairs]))
        check(response, allowed=(200, 400))
        if response.status_code == 400:  # the page still shows the question's own figure
            assert 'class="visual-image"' in response.get_data(as_text=True)

    run()


def test_fuzz_instructor_preview_seed_and_overrides(instructor_client, questions):
    @fuzz(60)
    @given(st.sampled_from(questions), seed_text,
           query_pairs(["v", "d_model", "num_heads", "temperature"]))
    def run(item, seed, pairs):
        bank_id, question = item
        response = instructor_client.get(f"/instructor/preview/{bank_id}/{question.id}?"
                                         + urlencode([("seed", seed), *pairs]))
        check(response, allowed=(200, 400))

    run()


# --------------------------------------------------------------------------------------------------
# The instructor sign-in form


def test_fuzz_instructor_login_form(fuzz_app):
    @fuzz(80)
    @given(st.one_of(st.none(), any_text, nasty, st.just(INSTRUCTOR_PASSWORD), st.integers(1000, 70_000).map("p".__mul__)),
           st.one_of(st.none(), path_segment(), st.sampled_from(
               ["/instructor/", "//evil.example", "/\\evil.example", "https://evil.example/", "/\t/evil.example",
                "javascript:alert(1)", "/instructor/banks/attention-transformers?x=1"])),
           st.sampled_from(["valid", "valid", "missing", "forged"]), st.sampled_from(["form", "multipart", "json"]))
    def run(password, next_target, csrf, encoding):
        client = fuzz_app.test_client()
        page = client.get("/instructor/login")
        token = csrf_token(page.get_data(as_text=True))
        fields: dict[str, str] = {}
        if password is not None:
            fields["password"] = password
        if next_target is not None:
            fields["next"] = next_target
        if csrf == "valid":
            fields["csrf_token"] = token
        elif csrf == "forged":
            fields["csrf_token"] = token[::-1]
        if encoding == "json":
            response = client.post("/instructor/login", json=fields)
        else:
            response = client.post("/instructor/login", data=fields,
                                   content_type="multipart/form-data" if encoding == "multipart" else None)
        check(response, "POST", allowed=(303, 400, 401, 413))
        signed_in = client.get("/instructor/").status_code == 200
        assert signed_in == (response.status_code == 303)
        if signed_in:
            assert password == INSTRUCTOR_PASSWORD and csrf == "valid" and encoding != "json"

    run()


# --------------------------------------------------------------------------------------------------
# Spot checks of the bugs the fuzzing above found (so a regression names itself)


@pytest.mark.parametrize("body", [
    "[" * 50_000 + "]" * 50_000,
    '{"answer": ' + "9" * 400 + "}",
    '{"answer": 32, "seed": "²"}',
    '{"answer": 32, "seed": "' + "1" * 5000 + '"}',
])
def test_grade_api_refuses_pathological_json_with_a_sentence(fuzz_app, body):
    client = fuzz_app.test_client()
    response = client.post("/api/banks/attention-practice/questions/head-dimension-variant/grade",
                           data=body, content_type="application/json")
    check(response, "POST", allowed=(400, 413))


@pytest.mark.parametrize("seed", ["²", "1" * 5000, "٣"])
def test_seed_parameters_refuse_unicode_and_overlong_digits(fuzz_app, instructor_client, seed):
    client = fuzz_app.test_client()
    response = client.get("/api/banks/attention-practice/questions/head-dimension-variant?" + urlencode({"seed": seed}))
    check(response, allowed=(400,))
    response = instructor_client.get("/instructor/preview/attention-practice/head-dimension-variant?"
                                     + urlencode({"seed": seed}))
    check(response, allowed=(400,))


@pytest.mark.parametrize("path", [f"/quiz/{SEED_BANK}/head-dimension", "/instructor/login"])
def test_a_multipart_part_without_a_name_is_refused_with_a_sentence(fuzz_app, path):
    client = fuzz_app.test_client()
    client.get(path)
    body = (b"--b\r\nContent-Disposition: form-data\r\n\r\n32\r\n"
            b"--b\r\nContent-Disposition: form-data; name=\"answer\"\r\n\r\n32\r\n--b--\r\n")
    response = client.post(path, data=body, content_type="multipart/form-data; boundary=b")
    check(response, "POST", allowed=(400,))
    assert "no field name" in error_sentences(response)[0]


def test_sentence_detector_cannot_pass_an_empty_error_page(fuzz_app):
    """The checker itself: a 4xx without a sentence must fail it."""
    response = fuzz_app.response_class('<p class="error-message"></p>', status=400, mimetype="text/html")
    with pytest.raises(AssertionError):
        check(response)
    response = fuzz_app.response_class(json.dumps({"error": {"status": 400, "title": "x", "message": ""}}),
                                       status=400, mimetype="application/json")
    with pytest.raises(AssertionError):
        check(response)


@pytest.mark.parametrize("where", ["path", "query", "form", "lti"])
def test_a_nul_character_anywhere_is_refused_with_a_sentence(fuzz_app, where):
    """No id, answer or name holds a NUL, and PostgreSQL refuses one in any text it compares (a 500 there before);
    the test for that database is tests/test_persistence.py's."""
    client = fuzz_app.test_client()
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension")
    form = {"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": "32"}
    if where == "path":
        response = client.get(f"/quiz/{SEED_BANK}/head%00dimension")
    elif where == "query":  # the LMS's OIDC login, as a GET
        response = client.get("/lti/login?iss=a%00b&client_id=c&login_hint=x&target_link_uri=http://localhost/")
    elif where == "form":
        response = client.post(f"/quiz/{SEED_BANK}/head-dimension", data={**form, "answer": "3\x002"})
    else:  # the LMS's launch: its state is looked up in the database
        response = client.post("/lti/launch", data={"id_token": "a.b.c", "state": "s\x00"})
    check(response, "GET" if where in ("path", "query") else "POST", allowed=(400,))
    assert "NUL character" in error_sentences(response)[0]
    answer = client.post(f"/quiz/{SEED_BANK}/head-dimension", data=form)  # nothing was lost: the answer goes in
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/answer")


@pytest.mark.parametrize("try_number", ["0", "00"])
def test_a_try_number_below_1_is_refused_not_dropped(fuzz_app, try_number):
    client = fuzz_app.test_client()
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension")
    response = client.post(f"/quiz/{SEED_BANK}/head-dimension",
                           data={"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": "32",
                                 "try": try_number})
    check(response, "POST", allowed=(400,))
    assert "not a whole number from 1" in error_sentences(response)[0]


def test_more_choices_than_options_are_refused_before_any_is_looked_up(fuzz_app):
    client = fuzz_app.test_client()
    response = client.post(f"/api/banks/{SEED_BANK}/questions/transformer-advantages/grade",
                           json={"answer": ["long-range"] * 4000})  # under the 64 kB body limit
    check(response, "POST", allowed=(400,))
    assert "This question has 3 options, and each may be chosen only once." in error_sentences(response)[0]


@pytest.mark.parametrize("stored", [{"attempts": []}, {"attempts": {SEED_BANK: 7}},
                                    {"attempts": {"x": "a"}, "started": "3"}, {"started": {SEED_BANK: "1"}},
                                    {"lms_attempts": {SEED_BANK: None}}, {"client": 12}, {"names": ["Ada"]},
                                    {"_flashes": "x"}, {"_flashes": [["message"]]}, {"_flashes": [5]},
                                    {"csrf_token": 5}, {"csrf_token": ["x"]}], ids=str)
def test_a_session_of_another_shape_starts_afresh(fuzz_app, stored):
    """A signed session whose maps have another shape (another version's cookie, or a leaked key's) is dropped:
    the student gets a fresh attempt whose answers are stored, never a 500."""
    client = fuzz_app.test_client()
    with client.session_transaction() as session:
        session.update(stored)
    for path in (f"/quiz/{SEED_BANK}/", f"/quiz/{SEED_BANK}/summary", "/plots/soft-lookup.png?temperature=2"):
        check(client.get(path), allowed=(200, 302, 303))
    page = client.get(f"/quiz/{SEED_BANK}/head-dimension")
    check(page, allowed=(200,))
    answer = client.post(f"/quiz/{SEED_BANK}/head-dimension",
                         data={"csrf_token": csrf_token(page.get_data(as_text=True)), "answer": "32"})
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/answer")
    assert "Correct" in client.get(answer.headers["Location"]).get_data(as_text=True)


@pytest.mark.parametrize("course", [{"until": 1e20}, {"until": "x"}, {"until": None}, "x",
                                    {"until": 1e20, "platform": "1", "deployment": "d", "context": "c", "title": "t"}],
                         ids=str)
def test_an_lti_course_session_of_another_shape_is_a_sign_in_sentence(fuzz_app, course):
    client = fuzz_app.test_client()
    with client.session_transaction() as session:
        session["lti_course"] = course
    page = client.get("/lti/course")
    assert page.status_code == 403 and "open the tool from your course in the LMS" in page.get_data(as_text=True)

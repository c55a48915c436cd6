"""The instructor preview: any bank and question with its answer key, every feedback text, the
visual, and a seed selector for parameterised questions; broken banks show their errors here.

Routes hang off the instructor blueprint, so its sign-in guard covers them.
"""

from __future__ import annotations

from flask import redirect, render_template, request, url_for

from ..bank import banks
from ..bank.variants import MAX_SEED, VariantError, apply, draw, has_params, parse_seed, sample_seeds
from ..errors import BadInput
from ..grading import correct_answer, grade, parse_form_answer
from ..web.progress import duration, when
from ..web.visual_views import visual_view
from .views import bp

@bp.get("/preview/")
def preview_index():
    registry = banks()
    listed = sorted(registry.banks.values(), key=lambda b: b.title.lower())
    return render_template("instructor/preview_index.html", banks=listed, errors=registry.errors,
                           stale=registry.stale)


@bp.get("/preview/<bank_id>/")
def preview_bank(bank_id: str):
    bank = banks().get(bank_id)
    return redirect(url_for(".preview_question", bank_id=bank.id, question_id=bank.questions[0].id))


@bp.get("/preview/<bank_id>/<question_id>")
def preview_question(bank_id: str, question_id: str):
    registry = banks()
    bank, template = registry.question(bank_id, question_id)
    seed = parse_seed(request.args.get("seed"))
    values, question, failure, shown_seed = {}, template, None, seed
    if has_params(template):
        # This seed's own variant; if it cannot be made, the one its students get instead (see instantiate).
        for shown_seed in (seed, *sample_seeds()):
            try:
                values = draw(template, shown_seed)
                question = apply(template, values)
                break
            except VariantError as error:
                failure = failure or str(error)
        else:
            raise BadInput(f"Seed {seed} cannot be instantiated: {failure}")
    index = bank.index_of(question.id)
    key, given, tried, refused = correct_answer(question), request.args.getlist("answer"), None, None
    if given:  # "Answer as a student": graded as the answer page grades it, and stored nowhere
        try:
            tried = grade(question, parse_form_answer(question, given))
        except BadInput as error:
            refused = error.message
    visual = None
    if question.visual is not None:  # drawn for the answer tried, else as a student who answered right sees it
        visual = visual_view(question.visual.kind, question.visual.params, request.args.to_dict(flat=False),
                             question.learn, question.type, answer=tried.answer if tried else key, key=key)
    stale_file = registry.stale.get(bank.id)
    return render_template(
        "instructor/preview.html", bank=bank, question=question, template=template, seed=seed, values=values,
        failure=failure, shown_seed=shown_seed, settings=_settings(bank),
        key=key, visual=visual, number=index + 1, given=given, tried=tried, refused=refused,
        previous=bank.questions[index - 1] if index > 0 else None,
        following=bank.questions[index + 1] if index + 1 < len(bank.questions) else None,
        stale_errors=registry.errors.get(stale_file, ()) if stale_file else (),
        max_seed=MAX_SEED,
    )


def _settings(bank) -> list[str]:
    """The bank's assessment settings, as the instructor wrote them (the feedback mode has its own line)."""
    shuffled = [what for what in ("questions", "options") if bank.shuffle and getattr(bank.shuffle, what)]
    return [text for text in (
        f"time limit {duration(bank.time_limit)}" if bank.time_limit else None,
        f"{bank.attempts} attempt{'s' if bank.attempts != 1 else ''} (counted per browser session)" if bank.attempts
        else None,
        f"shuffles its {' and '.join(shuffled)}" if shuffled else None,
        f"opens {when(bank.opens)}" if bank.opens else None,
        f"closes {when(bank.closes)}" if bank.closes else None,
        *(f"pool {pool.id}: each attempt draws {pool.draw} of {', '.join(pool.questions)}" for pool in bank.pools or ()),
    ) if text]

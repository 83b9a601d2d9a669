"""The docs site and the README: the site builds with warnings as errors and every internal link of the built
HTML lands on a file and an anchor that exist; its generated parts come from their sources; the README is a
short door whose links resolve and whose code runs; the code on the docs pages runs as it stands there.

A code block is found by the HTML comment marker before it (``<!-- tour -->``), in the README or in a page."""

from __future__ import annotations

import html.parser
import inspect
import pathlib
import re
import subprocess
import sys
import urllib.parse

import pytest

from popejoan_env.observation import LAYOUT, STATE_LAYOUT, bounds

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
sys.path.insert(0, str(DOCS / "_ext"))
from popejoan_docs import TABLES, extras, generate, site_links  # noqa: E402  (docs/_ext is not a package)


def block_after(marker: str, page: pathlib.Path = README) -> str:
    """The fenced code block that follows the HTML comment ``<!-- marker -->`` in a Markdown file."""
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```", page.read_text(), re.S)
    assert match, f"no code block after <!-- {marker} --> in {page.relative_to(ROOT)}"
    return match.group(1)


def run_block(marker: str, page: pathlib.Path = README, timeout: int = 120) -> str:
    """Run a code block in a fresh interpreter from the repository's root; its stdout."""
    out = subprocess.run([sys.executable, "-c", block_after(marker, page)], capture_output=True, text=True,
                         timeout=timeout, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


# ------------------------------------------------------------------ the README: a door, not the house
def test_the_readme_is_under_200_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; the details belong in docs/"


def relative_links(text: str) -> list[str]:
    """The targets of a Markdown file's links and images that are not web addresses or same-page anchors."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    return [t for t in targets if not re.match(r"(https?:|mailto:|#)", t)]


def test_every_relative_link_of_the_readme_is_a_file_of_the_repository() -> None:
    links = relative_links(README.read_text())
    assert len(links) >= 10  # the picture and the doors into the docs: the check is not of nothing
    for link in links:
        path = ROOT / urllib.parse.unquote(link.split("#")[0])
        assert path.is_file(), f"README.md links {link}, which is not a file of the repository"


def github_anchors(page: pathlib.Path) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings (lower case, punctuation but ``-`` and ``_`` dropped,
    spaces as ``-``, ``-1``, ``-2`` after repeats), read through a page that only includes another (a model card)."""
    text = page.read_text()
    included = re.match(r"```\{include\} (\S+)", text)
    if included:
        return github_anchors((page.parent / included.group(1)).resolve())
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6}\s+(.*)$", line)
        if heading and not fenced:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_anchor_of_a_markdown_link_is_a_heading_of_its_page_as_github_names_it() -> None:
    # The site builder gives a heading a second id of its own ("panel-2" for "panel/2"): a link to that one
    # built and landed in the site, and on GitHub landed at the top of the page.
    pages = [README, *sorted(DOCS.glob("**/*.md")), *sorted((ROOT / "models").glob("**/*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            path, _, anchor = target.partition("#")
            if not anchor or re.match(r"(https?:|mailto:)", target) or not path.endswith((".md", "")):
                continue
            linked = (page.parent / urllib.parse.unquote(path)).resolve() if path else page
            if linked.suffix != ".md":
                continue
            assert anchor in github_anchors(linked), f"{page.relative_to(ROOT)} links {target}: no such heading"
            checked += 1
    assert checked >= 50


def test_a_model_card_link_is_to_the_card_itself_and_the_site_links_its_page() -> None:
    # docs/models/X.md only includes the card: on GitHub it shows the include directive, not the card.
    for page in sorted(DOCS.glob("**/*.md")):
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            linked = (page.parent / target.partition("#")[0]).resolve()
            assert linked.parent != DOCS / "models" or page.parent == DOCS / "models", (
                f"{page.relative_to(ROOT)} links {target}, a page GitHub shows as an include: "
                f"link ../models/{linked.stem}/MODEL_CARD.md")
    text = "see [the card](../models/shipped/MODEL_CARD.md#a-fourth-round) and [x](../models/round2/MODEL_CARD.md)"
    assert site_links(text, "training") == "see [the card](models/shipped.md#a-fourth-round) and [x](models/round2.md)"
    assert site_links(text.replace("](../", "](../../"), "guide/training") == (
        "see [the card](../models/shipped.md#a-fourth-round) and [x](../models/round2.md)")


def test_every_test_file_is_on_the_tests_page() -> None:
    """The tests page's table says what each file proves: a new file without a row was a suite the page did not
    describe (five were missing)."""
    page = (ROOT / "docs" / "tests.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`(test_\w+\.py)`", row.split(" | ")[0])}
    files = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    assert not files - listed, f"docs/tests.md has no row for {sorted(files - listed)}"
    assert not listed - files, f"docs/tests.md lists files that are not there: {sorted(listed - files)}"


def test_the_readme_env_example_runs_and_prints_each_seats_counters() -> None:
    code = block_after("env-example")
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    deltas = eval(run_block("env-example").strip().splitlines()[-1])  # noqa: S307 - our own printed list
    assert len(deltas) == 4 and all(isinstance(d, int) for d in deltas) and any(deltas)
    again = eval(run_block("env-example").strip().splitlines()[-1])  # noqa: S307
    assert again == deltas, "reset(seed=7) seeds the action spaces: the example prints the same in any process"


def test_quick_start_is_two_one_line_commands() -> None:
    main, tests = block_after("main-command").strip(), block_after("test-command").strip()
    for command in (main, tests):
        assert "\n" not in command and command.startswith("pip install torch==2.13.0 && ")
    assert "train_ppo.py" in main and "pytest" in tests


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "test-command" in ci
    extracted = subprocess.run(
        ["awk", "/<!-- test-command -->/{getline; getline; print; exit}", "README.md"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout.strip()
    assert extracted == block_after("test-command").strip()


def test_numba_is_a_core_dependency_and_the_commands_name_no_fast_extra() -> None:
    """The batch engine's rules are compiled loops only: numba is installed with the package, not an extra."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    core = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.S | re.M)
    assert core and re.search(r'"numba>=', core.group(1))
    assert not re.search(r"^fast = \[", pyproject, re.M)
    for command in (block_after("main-command"), block_after("test-command")):
        assert "fast" not in command


def test_the_docs_extra_installs_what_the_site_is_built_with() -> None:
    docs = re.search(r"^docs = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    assert docs, "pyproject.toml has no docs extra"
    for package in ("sphinx", "furo", "myst-parser"):
        assert f'"{package}>=' in docs.group(1)


def test_the_citation_and_the_changelog_name_the_version_pyproject_gives() -> None:
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    citation = re.search(r"^version: (\S+)$", (ROOT / "CITATION.cff").read_text(), re.M)
    latest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert version and citation and latest
    assert citation.group(1) == version.group(1), f"CITATION.cff cites {citation.group(1)}: not pyproject.toml's"
    assert latest.group(1) == version.group(1), f"CHANGELOG.md's newest section is {latest.group(1)}: not pyproject's"


def test_every_environment_id_the_pages_and_the_citation_write_has_the_envs_version() -> None:
    from popejoan_env.envs.registration import ENV_VERSION

    pages = [README, ROOT / "CITATION.cff", *sorted(DOCS.glob("**/*.md")), *sorted((ROOT / "models").glob("*/*.md"))]
    found = [(page.relative_to(ROOT), int(v)) for page in pages if "_build" not in page.parts
             for v in re.findall(r"(?:pope_joan_v|pope_joan-v|PopeJoan-v)(\d+)", page.read_text())]
    assert len(found) >= 10
    assert all(v == ENV_VERSION for _, v in found), [f for f in found if f[1] != ENV_VERSION]


# ------------------------------------------------------------------ code on the docs pages
def test_engine_tour_runs() -> None:
    out = run_block("tour", DOCS / "getting_started.md")
    assert "winner" in out and "cannot play KS" in out


def test_a_user_written_player_plugs_into_the_tournament_and_the_env() -> None:
    code = block_after("your-player", DOCS / "getting_started.md")
    assert len([line for line in code.splitlines() if line.strip()]) <= 16
    out = run_block("your-player", DOCS / "getting_started.md")
    assert "highest_first" in out and "stops_first" in out


def test_both_env_checkers_pass_on_the_gym_view_as_the_views_page_shows() -> None:
    assert "both checkers pass" in run_block("check-env", DOCS / "views.md")


def test_the_rllib_recipe_on_the_views_page_is_configures_own_example() -> None:
    pytest.importorskip("ray", reason="the RLlib recipe needs the ray extra")
    from popejoan_env.envs import rllib_env
    example = [line.strip() for line in block_after("rllib-configure", DOCS / "views.md").splitlines() if line.strip()]
    docstring = [line.strip() for line in (rllib_env.configure.__doc__ or "").splitlines()]
    assert all(line in docstring for line in example), "docs/views.md's RLlib recipe is configure's docstring example"


def test_batch_engine_tour_runs() -> None:
    out = run_block("batch-tour", DOCS / "batch.md", timeout=300)
    assert int(out.split()[0]) > 100 * 4096


# ------------------------------------------------------------------ generated parts
def environment_page() -> str:
    """The environment page's Markdown as the build makes it."""
    return generate((DOCS / "environment.md").read_text())


def table_rows(markdown: str) -> set[tuple[str, ...]]:
    """The cells of every row of every pipe table in a Markdown text."""
    return {tuple(c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|")))
            for line in markdown.splitlines() if line.lstrip().startswith("|")}


def test_the_environment_page_is_the_env_docstring_and_lists_every_observation_field() -> None:
    from popejoan_env.envs import pettingzoo_aec

    page = environment_page()
    assert page.strip() == pettingzoo_aec.__doc__.strip()
    rows = table_rows(page)
    for name, start, length, text in LAYOUT + STATE_LAYOUT:
        assert (name, str(start), str(length), text) in rows, f"the environment page lacks the row of {name}"
    for heading in ("Arguments", "Observation Space", "Legal Actions Mask", "Action Space", "Rewards",
                    "Termination and truncation", "Version History"):
        assert re.search(rf"^#+ {heading}$", page, re.M), f"the environment page has no {heading!r} section"


def test_the_box_bounds_the_environment_page_explains_are_the_spaces_bounds() -> None:
    low, high = bounds()
    page = environment_page()
    assert f"[−{int(-low.min())}, {int(high.max())}]" in page
    assert f"`2**20 / 16 = {int(high.max())}`" in page and f"`±2**20 / 64 = ±{int(-low.min())}`" in page


def test_every_generated_table_is_what_its_source_writes() -> None:
    from test_architecture import LAYERS, layers_table

    assert set(TABLES) == {"layers", "observation-layout", "state-layout", "extras"}
    architecture = generate((DOCS / "architecture.md").read_text())
    assert layers_table() in architecture and "<!-- table:" not in architecture
    for k, layer in enumerate(LAYERS):
        assert f"| {k} | " in architecture and layer.what in architecture


def test_the_extras_table_is_every_extra_of_pyproject_with_the_comment_above_it() -> None:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader checks the table's own reading")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    listed = extras((ROOT / "pyproject.toml").read_text())
    assert [(name, requirements) for name, _, requirements in listed] == list(declared.items())
    page = generate((DOCS / "getting_started.md").read_text())
    rows = {row[0]: row for row in table_rows(page) if len(row) == 3}
    for name, purpose, requirements in listed:
        assert rows[f"`{name}`"] == (f"`{name}`", purpose, ", ".join(f"`{r}`" for r in requirements))
        assert len(purpose.split()) >= 5, f"the extra {name!r} has no purpose worth the name: {purpose!r}"
    assert {"openspiel", "peers"} <= set(declared) and "bench" not in declared
    assert "`bench`" not in page  # the extra of that name never existed (issue 41)


def test_an_extra_without_its_comment_is_refused_by_name() -> None:
    text = '[project.optional-dependencies]\n# web: the web app\nweb = ["fastapi"]\n\nlone = [\n    "x>=1",\n]\n'
    with pytest.raises(ValueError, match="the extra 'lone' has no comment '# lone: what it is for'"):
        extras(text)
    assert extras(text.split("\n\n")[0] + "\n") == [("web", "the web app", ["fastapi"])]


def test_the_docs_build_sees_only_what_the_docs_extra_installs() -> None:
    """What ``tests/docs_extra_only.py`` hides from the site's build: every other extra, not the docs' own needs."""
    import importlib.util

    from docs_extra_only import installed_with, unimportable

    assert {"sphinx", "furo", "myst-parser", "numpy", "numba", "pettingzoo", "popejoan"} <= installed_with()
    hidden = unimportable()
    for module in ("torch", "stable_baselines3", "ray", "fastapi", "pyspiel", "scipy", "hypothesis", "playwright"):
        assert importlib.util.find_spec(module) is None or module in hidden, module
    assert not {"sphinx", "myst_parser", "numpy", "popejoan_env", "pettingzoo", "gymnasium"} & hidden
    out = subprocess.run([sys.executable, "-c", "import sys, docs_extra_only as d; "
                          "sys.meta_path.insert(0, d.Unimportable({'popejoan_env'})); import popejoan_env"],
                         capture_output=True, text=True, cwd=ROOT / "tests", timeout=60)
    assert "No module named 'popejoan_env' (the docs extra does not install it)" in out.stderr


def test_an_unknown_generated_table_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown generated table 'nope'"):
        generate("<!-- table: nope -->\n")


@pytest.mark.slow
def test_the_reward_magnitudes_on_the_environment_page_are_what_simulate_measures() -> None:
    """Min … max and mean abs(reward) of the Rewards table, measured again with the page's own command for two of
    its twelve columns (one per preset, the main job's table and the largest: the other cells come from the same
    command, and twelve runs took half a minute of the suite's budget)."""
    page = environment_page()
    header = next(r for r in table_rows(page) if r[0] == "players")
    sizes = [int(n) for n in header[1:]]
    for preset in ("modern", "victorian"):
        ranges = next(r for r in table_rows(page) if r[0] == f"`{preset}`: min … max")[1:]
        means = next(r for r in table_rows(page) if r[0] == f"`{preset}`: mean abs(reward)")[1:]
        for players, stated, mean in zip(sizes, ranges, means):
            if (preset, players) not in (("modern", 4), ("victorian", 8)):
                continue
            out = subprocess.run(
                [sys.executable, "-m", "popejoan_env", "simulate", "--players", str(players), "--preset", preset,
                 "--deals", "10000", "--seed", "1", "--session-length", "1", "--quiet", "--out", "-"],
                capture_output=True, text=True, check=True, timeout=300, cwd=ROOT,
            ).stdout
            deltas = [d for line in out.splitlines() for d in __import__("json").loads(line)["delta"]]
            assert stated == f"{min(deltas)} … {max(deltas)}".replace("-", "−"), (preset, players)
            assert mean == f"{sum(abs(d) for d in deltas) / len(deltas):.2f}", (preset, players)


# ------------------------------------------------------------------ the built site
class _Links(html.parser.HTMLParser):
    """The ids, and the href/src targets, of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            elif key in ("href", "src") and value:
                self.targets.append(value)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The site, built as the README says and as from a venv with the ``docs`` extra alone (every other installed
    package unimportable, ``tests/docs_extra_only.py``): warnings are errors, every reference must resolve (``-n``)."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "docs_extra_only.py"), "-W", "--keep-going", "-n", "-q", "-b", "html",
         str(DOCS), str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert build.returncode == 0, f"the docs build failed:\n{build.stderr[-4000:]}"
    return out


@pytest.mark.slow
def test_the_site_builds_and_every_internal_link_lands_on_a_file_and_an_anchor(site: pathlib.Path) -> None:
    pages = {path: _Links() for path in site.rglob("*.html")}
    for path, parser in pages.items():
        parser.feed(path.read_text())
    checked = 0
    for path, parser in pages.items():
        for target in parser.targets:
            if re.match(r"(https?:|mailto:|data:|javascript:)", target):
                continue
            url = urllib.parse.urlsplit(target)
            file = (path.parent / urllib.parse.unquote(url.path)).resolve() if url.path else path
            where = f"{path.relative_to(site)} links {target}"
            assert file.is_file(), f"{where}: no such file in the site"
            if url.fragment and file.suffix == ".html":
                assert url.fragment in pages[file].ids, f"{where}: {file.name} has no id {url.fragment!r}"
            checked += 1
    assert checked > 1000  # every page's navigation and the pages' own links: not a check of nothing


@pytest.mark.slow
def test_the_built_environment_page_has_every_observation_field_in_its_table(site: pathlib.Path) -> None:
    text = (site / "environment.html").read_text()
    for name, start, length, _ in LAYOUT:
        assert re.search(rf"<td><p>{name}</p></td>\s*<td><p>{start}</p></td>\s*<td><p>{length}</p></td>", text), name


@pytest.mark.slow
def test_every_page_of_the_docs_is_in_the_site(site: pathlib.Path) -> None:
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts:
            continue
        built = site / page.relative_to(DOCS).with_suffix(".html")
        assert built.is_file(), f"docs/{page.relative_to(DOCS)} was not built (is it in a toctree?)"


# ------------------------------------------------------------------ defaults the pages state in prose
def _defaults_the_pages_state() -> list[tuple[str, str]]:
    """(page, text it must hold): each text built from the code's own default, so a default changed in one place
    alone fails here."""
    import popejoan_env.envs.gymnasium_env as gym_view
    from popejoan_env.players import best_response, guided, pimc
    from popejoan_env.rules import MODERN
    from popejoan_env.simulate import BATCH_SIZE

    given = inspect.signature(best_response.BestResponsePlayer).parameters
    exploit = (f"(defaults {given['worlds'].default}, {best_response.DEFAULT_DRAWS:,}, {given['rounds'].default}, "
               f"{given['confidence'].default:g}, `{given['posterior'].default}`)")
    return [("players.md", f"`pimc:samples=N` (default {pimc.DEFAULT_SAMPLES})"),
            ("players.md", f"`pimc_net:samples=N` (default {guided.DEFAULT_SAMPLES})"),
            ("players.md", f"`prior=λ` (default {guided.DEFAULT_PRIOR:g};"),
            ("players.md", exploit),
            ("evaluation.md", f"`--worlds` (default {best_response.DEFAULT_WORLDS})"),
            ("evaluation.md", f"`--draws` (default {best_response.DEFAULT_DRAWS:,})"),
            ("records.md", f"`--batch-size N` deals in flight (default {BATCH_SIZE:,};"),
            ("views.md", f"the AEC env's sessions at {MODERN.start_counters})"),
            ("views.md", "`illegal_reward` (default {} counters".format(
                f"{inspect.signature(gym_view.PopeJoanGymEnv).parameters['illegal_reward'].default:g}"
                .replace("-", "\N{MINUS SIGN}")))]


@pytest.mark.parametrize(("page", "text"), _defaults_the_pages_state(), ids=lambda x: str(x)[:30])
def test_a_default_a_page_states_in_prose_is_the_codes(page: str, text: str) -> None:
    written = " ".join((DOCS / page).read_text().split())
    assert text in written, f"docs/{page} does not say {text!r}: the default changed in the code or the page"

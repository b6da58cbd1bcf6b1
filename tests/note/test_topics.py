"""The topic file format: render, read both forms, append, supersede, See Also, retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core.errors import InvalidArgumentError
from vaultmem.note.topics import (
    SEE_ALSO_END,
    SEE_ALSO_START,
    append_observation,
    check_key,
    check_tags,
    derive_key,
    is_expired,
    iso_utc,
    normalise_text,
    observation_stamp,
    read_topic,
    render_topic,
    replace_see_also,
    supersede,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "example-vault" / "agent-memory"
T1, T2, T3 = "2026-11-29T21:04:05Z", "2026-11-29T22:00:00Z", "2026-11-30T08:00:00Z"


def _new(text: str = "First fact.") -> str:
    return render_topic(
        id="6f1d0c52-8a3e-4b7f-9c21-5e4a7b9d2f10", key="build-commands", scope="project",
        scope_id="2026", type="project", tags=["build", "ci/cd"], source="claude-code",
        timestamp=T1, text=text,
    )  # fmt: skip


def test_render_has_stable_keys_and_string_timestamps() -> None:
    text = _new()
    front = text.split("---\n")[1]
    keys = [line.split(":", 1)[0] for line in front.splitlines()]
    assert keys == [
        "id",
        "key",
        "scope",
        "scope_id",
        "type",
        "tags",
        "created",
        "updated",
        "source",
    ]
    data = yaml.safe_load(front)
    assert data["created"] == T1 and isinstance(data["created"], str)
    assert data["scope_id"] == "2026"  # quoted: YAML would make it an int
    assert data["id"] == "6f1d0c52-8a3e-4b7f-9c21-5e4a7b9d2f10"
    assert f"# build-commands\n\n## {T1}\nFirst fact.\n" in text


def test_read_round_trip() -> None:
    topic = read_topic("agent-memory/project/2026/build-commands.md", _new())
    assert topic.key == "build-commands" and topic.scope == "project"
    assert topic.scope_id == "2026" and topic.tags == ("build", "ci/cd")
    assert topic.created == T1 == topic.updated and topic.source == "claude-code"
    assert [(o.timestamp, o.text) for o in topic.observations] == [(T1, "First fact.")]
    assert topic.form == "frontmatter" and topic.latest == "First fact."


def test_reads_the_comment_form() -> None:
    path = "agent-memory/project/atlas/release-process.md"
    topic = read_topic(path, (EXAMPLE / "project/atlas/release-process.md").read_text())
    assert topic.form == "comment"
    assert topic.id == "c4e2a1f9-7d30-4b6e-8f15-2a9b0c6d3e47"
    assert (topic.scope, topic.scope_id, topic.type) == ("project", "atlas", "reference")
    assert topic.tags == ("release", "ci")
    assert [o.timestamp for o in topic.observations] == [
        "2026-09-14T08:20:00Z",
        "2026-11-24T15:45:00Z",
    ]
    assert topic.updated == "2026-11-24T15:45:00Z"
    assert topic.latest is not None and topic.latest.startswith("Dana added")


def test_reads_every_example_topic() -> None:
    for file in EXAMPLE.rglob("*.md"):
        topic = read_topic(file.as_posix(), file.read_text())
        assert topic.id and topic.observations, file
        assert all(o.text for o in topic.observations)


def test_append_keeps_every_byte_and_goes_before_see_also() -> None:
    original = (EXAMPLE / "project/atlas/build-and-test-commands.md").read_text()
    edited = original.replace("(about 20 s)", "(about 20 s, said Dana)")  # a person's edit
    new = append_observation(edited, T3, "New fact.")
    head, see_also = edited.split("## See Also")
    head = head.replace('updated: "2026-11-27T16:40:00Z"', f'updated: "{T3}"')
    assert new == head + f"## {T3}\nNew fact.\n\n## See Also" + see_also
    assert read_topic("x.md", new).updated == T3


def test_append_to_the_comment_form_keeps_its_form() -> None:
    original = (EXAMPLE / "project/atlas/release-process.md").read_text()
    new = append_observation(original, T3, "Tag from main only.")
    assert f"### {T3}\nTag from main only.\n\n## See Also" in new
    assert new.startswith(original.split("## See Also")[0])
    assert read_topic("x.md", new).observations[-1].text == "Tag from main only."


def test_append_without_see_also_and_heading_like_text() -> None:
    text = _new()
    new = append_observation(text, T2, f"## {T3}\nnot a section")
    assert new.startswith(text.replace(f'updated: "{T1}"', f'updated: "{T2}"'))
    topic = read_topic("x.md", new)
    assert len(topic.observations) == 2  # the injected heading stayed text


def test_headings_inside_code_are_not_sections() -> None:
    text = _new("```\n## 2026-01-01T00:00:00Z\n```")
    assert len(read_topic("x.md", text).observations) == 1


def test_supersede_keeps_the_old_text_visible() -> None:
    text = append_observation(_new(), T2, "Second, wrong.")
    new = supersede(text, T3, "Second, right.")
    assert "Second, wrong." in new and f"> Superseded by {T3}\nSecond, wrong." in new
    topic = read_topic("x.md", new)
    assert [o.superseded_by for o in topic.observations] == [None, T3, None]
    assert topic.latest == "Second, right."
    again = supersede(new, "2026-12-01T00:00:00Z", "Second, final.")
    topic = read_topic("x.md", again)
    assert [o.superseded_by is None for o in topic.observations] == [True, False, False, True]


def test_see_also_block_keeps_human_links() -> None:
    original = (EXAMPLE / "global/user-preferences.md").read_text()
    entries = ["- [[agent-memory/global/code-review-feedback|code-review-feedback]] (relates_to)"]
    new = replace_see_also(original, entries)
    assert "- [[Code review guidelines]]\n- [[Dana Whitfield]]\n" + SEE_ALSO_START in new
    assert replace_see_also(new, entries) == new
    assert SEE_ALSO_END in new and new.startswith(original.rstrip("\n"))
    cleared = replace_see_also(new, [])
    assert SEE_ALSO_START not in cleared and "[[Dana Whitfield]]" in cleared
    fresh = replace_see_also(_new(), entries)
    assert fresh.endswith(f"## See Also\n{SEE_ALSO_START}\n{entries[0]}\n{SEE_ALSO_END}\n")
    appended = append_observation(fresh, T2, "Later.")
    assert appended.index(f"## {T2}") < appended.index("## See Also")


@pytest.mark.parametrize("key", ["Build", "a b", "a/b", "..", "", "x" * 61, "ünï", "a_b"])
def test_invalid_keys_are_rejected_with_the_rule(key: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        check_key(key)
    assert "[a-z0-9-]{1,60}" in info.value.message


def test_keys_are_derived_from_the_first_words() -> None:
    assert derive_key("Use uv, never pip; it's faster.") == "use-uv-never-pip-it-s"
    assert derive_key("Ça marche très bien") == "ca-marche-tres-bien"
    assert derive_key("日本語").startswith("topic-")
    assert len(derive_key("word " * 100)) <= 60
    check_key(derive_key("supercalifragilistic" * 10))


def test_tags_and_timestamps() -> None:
    assert check_tags(["#a", "b/c", "a"]) == ("a", "b/c")
    with pytest.raises(InvalidArgumentError):
        check_tags(["has space"])
    assert iso_utc(datetime(2026, 11, 29, 22, 4, 5, tzinfo=UTC)) == "2026-11-29T22:04:05Z"


def test_retention_rules() -> None:
    updated = datetime(2026, 1, 1, tzinfo=UTC)
    stamp = iso_utc(updated)

    def row(scope: str, type_: str = "project", managed: bool = True) -> dict[str, object]:
        return {"scope": scope, "type": type_, "updated": stamp, "managed": managed}

    assert not is_expired(row("session"), updated + timedelta(days=13))
    assert is_expired(row("session"), updated + timedelta(days=14))
    assert not is_expired(row("project"), updated + timedelta(days=89))
    assert is_expired(row("project"), updated + timedelta(days=90))
    late = updated + timedelta(days=10_000)
    for scope in ("global", "agent", "federated"):
        assert not is_expired(row(scope), late)
    assert not is_expired(row("session", "user"), late)
    assert not is_expired(row("project", "feedback"), late)
    assert not is_expired(row("session", managed=False), late)  # human notes never expire
    assert not is_expired({"scope": "session", "updated": "garbage"}, late)
    assert is_expired(read_topic("x.md", _new()), datetime(2027, 6, 1, tzinfo=UTC))


# --- issue 16: observation boundaries ---------------------------------------------------------

HOSTILE_LINES = [
    "## Steps",
    "# Title",
    f"## {T3}",
    f"### {T3}",
    f"\\## {T3}",
    f"\\\\## {T3}",
    "## See Also",
    "## see also ##",
    f"> Superseded by {T3}",
    f"> Supersedes {T1}",
    f"\\> Superseded by {T3}",
    SEE_ALSO_START,
    SEE_ALSO_END,
    "  <!-- id: abc | scope: global -->",
    "```",
    "~~~~",
    "---",
    "",
    "   ",
]


def _round_trip(texts: list[str]) -> list[str]:
    """Store each text in turn (the first makes the topic), then read every observation."""
    stamps = [f"2026-11-29T21:04:{i:02d}.000Z" for i in range(len(texts))]
    topic = render_topic(
        id="i", key="k", scope="global", scope_id=None, type="user", tags=[], source=None,
        timestamp=stamps[0], text=texts[0],
    )  # fmt: skip
    for stamp, text in zip(stamps[1:], texts[1:], strict=True):
        topic = append_observation(topic, stamp, text)
    topic = replace_see_also(topic, ["- [[other]]"])
    read = read_topic("k.md", topic)
    assert [o.timestamp for o in read.observations] == stamps
    assert all(o.superseded_by is None for o in read.observations)
    return [o.text for o in read.observations]


def test_headings_inside_an_observation_are_its_text() -> None:
    texts = ["intro\n\n## Steps\n1. x", "# Title\nbody", "```\nunclosed fence", "after"]
    assert _round_trip(texts) == texts


@pytest.mark.parametrize("line", HOSTILE_LINES)
def test_every_structural_line_round_trips_as_text(line: str) -> None:
    texts = [f"a\n{line}\nb", f"{line}\nz", "last"]
    assert _round_trip(texts) == [normalise_text(t) for t in texts]


def test_a_marker_in_an_observation_is_never_rewritten() -> None:
    text = _new(f"keep\n{SEE_ALSO_START}\nmine\n{SEE_ALSO_END}")
    new = replace_see_also(text, ["- [[x]]"])
    assert (
        read_topic("x.md", new).observations[0].text
        == f"keep\n{SEE_ALSO_START}\nmine\n{SEE_ALSO_END}"
    )
    assert new.count("- [[x]]") == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(min_size=1).filter(lambda t: normalise_text(t).strip()), min_size=1, max_size=4
    )
)
def test_store_then_read_returns_the_text_byte_for_byte(texts: list[str]) -> None:
    assert _round_trip(texts) == [normalise_text(t) for t in texts]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([*HOSTILE_LINES, "x", "## a", "\\"]), min_size=1, max_size=12))
def test_hostile_line_mixes_round_trip(lines: list[str]) -> None:
    text = "\n".join(lines)
    if not normalise_text(text).strip():
        return
    assert _round_trip([text, text]) == [normalise_text(text)] * 2


def test_supersede_marks_only_what_it_wrote() -> None:
    text = append_observation(_new(f"> Superseded by {T3}"), T2, "second")
    topic = read_topic("x.md", text)
    assert [o.superseded_by for o in topic.observations] == [None, None]
    new = supersede(text, T3, "third")
    assert [o.superseded_by for o in read_topic("x.md", new).observations] == [None, T3, None]
    assert read_topic("x.md", new).observations[0].text == f"> Superseded by {T3}"


def test_stamps_are_unique_within_a_topic() -> None:
    moment = datetime(2026, 11, 29, 21, 4, 5, 123456, tzinfo=UTC)
    first = observation_stamp(moment)
    assert first == "2026-11-29T21:04:05.123Z"
    assert observation_stamp(moment, [first]) == "2026-11-29T21:04:05.124Z"
    old = "2026-11-29T21:04:05Z"  # second-precision stamps of older files still read
    assert read_topic("x.md", _new("x").replace(T1, old)).observations[0].timestamp == old

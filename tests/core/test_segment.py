"""Chinese and Japanese word segmentation (core/segment.py) as the tokenizer and snippets see it."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core import segment
from vaultmem.core.tokenizer import analyzer, tokenize, word_spans
from vaultmem.search.query import parse_query, snippet


def test_chinese_question_words_weigh_nothing() -> None:
    # 怎么 is how the question is asked: no term, and no bigram across it (么使)
    assert tokenize("怎么使用属性") == ["使用", "用属", "属性"]
    assert "么使" not in tokenize("怎么使用属性")
    assert tokenize("怎么") == []


def test_chinese_bigrams_stay_within_words_around_function_words() -> None:
    terms = tokenize("如何在多个设备之间同步笔记")
    assert terms[:3] == ["多个", "个设", "设备"]
    assert "在多" not in terms and "何在" not in terms


def test_chinese_locative_particles_weigh_nothing() -> None:
    # "on the phone", "in the folder": 上 and 里 alone give no term and no bigram across them
    terms = tokenize("安卓手机上怎么打开电脑上的仓库")
    assert terms == ["安卓", "卓手", "手机", "打开", "开电", "电脑", "仓库"]
    assert {"机上", "脑上", "上的"}.isdisjoint(terms)
    assert "夹里" not in tokenize("只在某个文件夹里搜索") and "搜索" in tokenize("文件夹里搜索")
    # inside a word they are the word's characters: 上传 (upload), 内部 (internal)
    assert tokenize("上传文件") == ["上传", "传文", "文件"]
    assert "内部" in tokenize("内部链接")


def test_japanese_keeps_every_bigram() -> None:
    # leaving out Japanese function words lost on the held-out half: the terms stay bigrams
    assert tokenize("ノートを同期する方法") == [
        *("ノー", "ート", "トを", "を同", "同期", "期す", "する", "る方", "方法"),
    ]


def test_multiword_stop_phrases() -> None:
    # Sudachi cuts 使い|方 and する|に|は: a sequence on the list is one stop phrase
    norm = "使い方"
    assert segment._stopped(norm, [(0, 2), (2, 3)]) == [True, True]
    assert segment._stopped("使い", [(0, 2)]) == [False]


def test_a_typo_still_shares_a_bigram() -> None:
    assert set(tokenize("属姓")) & set(tokenize("文档属性")) == set()
    assert "同步" in set(tokenize("同步笔记")) & set(tokenize("怎么同步"))


def test_spans_cover_whole_words() -> None:
    text = "在多个设备之间同步笔记"
    words = {text[s:e] for s, e, _ in word_spans(text)}
    assert words <= {
        "多个",
        "多个设备",
        "设备",
        "设备之间",
        "之间",
        "之间同步",
        "同步",
        "同步笔记",
        "笔记",
    }


def test_snippet_marks_whole_words() -> None:
    text = "你可以在多个设备之间同步笔记，也可以备份。"
    terms = set(tokenize("多个设备同步笔记"))
    out = snippet(text, terms)
    assert "**多个设备**" in out and "**同步笔记**" in out
    assert "****" not in out  # adjoining marks are one mark
    assert "**在多" not in out


def test_snippet_of_japanese_marks_whole_words() -> None:
    text = "デバイス間でノートを同期するには、Obsidian Syncを使います。"
    out = snippet(text, set(tokenize("ノート 同期")))
    assert "**ノート**" in out and "**同期**" in out and "****" not in out


def test_a_snippet_marks_words_holding_a_query_word_not_words_sharing_a_bigram() -> None:
    # ノート's bigram ート is in リモート, サポート and アップデート: ranking counts it, a reader
    # would see three unrelated words marked
    text = "リモートの保管庫、サポート、アップデート。ノートを同期するには、タグペインを開きます。"
    query = parse_query("ノートを同期する方法 タグ")
    out = snippet(text, set(query.terms), words=query.cjk_words)
    for unrelated in ("リモート", "サポート", "アップデート"):
        assert f"**{unrelated}**" not in out and f"{unrelated}**" not in out
    assert "**ノート**" in out and "**同期**" in out
    # a word holding the query's タグ is marked whole (the small dictionary keeps タグペイン
    # one word; the `cjk-full` one may cut it in two)
    assert "**タグペイン**" in out or "**タグ**ペイン" in out
    assert "**する**" not in out and "**方法**" not in out  # stop words are never marked
    # without the query's words, every word sharing a bigram is marked (the old rule)
    assert "**リモート**" in snippet(text, set(query.terms))


def test_a_chinese_snippet_marks_the_query_words_it_holds() -> None:
    text = "文件夹在设备间同步后，打开仓库。"
    query = parse_query("怎么在多个设备之间同步笔记")
    out = snippet(text, set(query.terms), words=query.cjk_words)
    assert "**设备**" in out and "**同步**" in out
    assert "**设备间" not in out  # 间 alone is no query word (之间 is)


def test_a_korean_snippet_marks_words_sharing_a_stem_not_an_ending() -> None:
    # 기기에서 and 동기화하는 share 에서 and 하는 with every word of those endings
    text = "노트를 기기에 저장하므로 오프라인에서도 가이드에서는 동기화는 해결하는 여러 기기에서"
    query = parse_query("여러 기기에서 노트 동기화하는 방법")
    out = snippet(text, set(query.terms), words=query.cjk_words)
    for marked in ("노트를", "기기에", "동기화는", "여러", "기기에서"):
        assert f"**{marked}**" in out, marked
    for unrelated in ("오프라인에서도", "가이드에서는", "해결하는"):
        assert f"**{unrelated}**" not in out, unrelated
    assert "**오프라인에서도**" in snippet(text, set(query.terms))  # the old rule


def test_a_snippet_sharing_only_bigrams_with_the_query_still_marks_them() -> None:
    # a section that ranked on a shared bigram alone is shown where it matched
    text = "x " * 400 + "リモートの保管庫"
    query = parse_query("ノート")
    out = snippet(text, set(query.terms), words=query.cjk_words)
    assert "**リモート**" in out


def test_query_words_are_the_han_kana_and_hangul_words_asked() -> None:
    query = parse_query("ノートを同期する方法 obsidian")
    assert set(query.cjk_words) == {frozenset({"ノー", "ート"}), frozenset({"同期"})}
    assert parse_query("obsidian sync").cjk_words == ()
    korean = parse_query("노트 동기화 방법")  # 방법 is a question word: no term, no word
    assert set(korean.cjk_words) == {frozenset({"노트"}), frozenset({"동기화", "동기", "기화"})}


def test_a_han_only_run_follows_the_note_language() -> None:
    assert segment.note_cjk("ja-JP", "") == "ja"
    assert segment.note_cjk(None, "ノートを同期") == "ja"
    assert segment.note_cjk("zh-CN", "ノート") == "zh"
    assert segment.note_cjk(None, "同步笔记") is None
    # the Japanese segmenter decides a Han-only run of a Japanese note
    assert "設定" in analyzer("english", "ja").tokenize("設定")


def test_long_runs_are_cut_for_the_japanese_segmenter() -> None:
    run = "ノートを同期する" * 1500  # 12,000 characters: above one Sudachi input
    assert tokenize(run).count("同期") == 1500


def test_korean_particles_meet_the_bare_word() -> None:
    assert "노트" in tokenize("노트를")
    assert tokenize("방법") == []


_CJK = st.text(
    alphabet=st.sampled_from(
        # 个 么 何 法: characters of stop words (这个, 怎么, 如何, 方法) that are none alone
        list("属性同步笔记设备之间怎么如何使用的是在和吗方法东京のをにはするノート手机上文件夹里个")
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_CJK, st.sampled_from([None, "zh", "ja"]))
def test_the_terms_alone_are_the_terms_of_the_spans(run: str, lang: str | None) -> None:
    """`terms` skips the segmenter where its words cannot change the terms; it must give
    exactly the terms `spans` gives, stop words and lone characters included."""
    assert segment.terms(run, lang) == [t for _, _, t in segment.spans(run, lang)]


def test_indexing_a_few_han_characters_or_japanese_loads_no_segmenter() -> None:
    """A note that names 東京 in English prose, or quotes a 个 that is no stop word by
    itself, and a Japanese note, are indexed without a dictionary (a real interpreter, so no
    other test has loaded one before)."""
    code = (
        "import sys\n"
        "from vaultmem.core.tokenizer import analyzer\n"
        "analyzer('english').counts('We met in 東京 and 大阪 last spring')\n"
        "analyzer('english').counts(\"return ''.concat(val, '个');\")\n"
        "analyzer('english', 'ja').counts('ノートを同期する方法と設定')\n"
        "print(sorted(m for m in ('rjieba', 'sudachipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

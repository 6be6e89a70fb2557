/* The site's search, made to read (conf.py loads this on every page, after the theme's scripts).

   1. Snippets. Sphinx's searchtools.js cuts each result's snippet from the text of [role="main"], which in this theme
      begins with the header's buttons ("System Settings Light Dark"), and looks there for the *stemmed* words: a
      query for pin_memory looks for "pin_memori", which the page does not contain, so every snippet showed the
      buttons. Here the snippet comes from the article alone, around the first place the query's own words (or, failing
      them, their stems less the last letter) occur.
   2. Landing. A result links to its page only; a click on it adds a text fragment (#:~:text=word, which Chromium,
      Safari and Firefox follow), so the page opens scrolled to the first place the query's word occurs.
*/
(function () {
  "use strict";

  function articleOf(doc, anchor) {
    const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    if (!article) return null;
    if (anchor) {
      try {
        const part = article.querySelector(anchor);
        if (part) return part;
      } catch (e) {
        /* an anchor that is not a selector: the whole article */
      }
    }
    return article;
  }

  function queryWords() {
    const q = new URLSearchParams(window.location.search).get("q") || "";
    return q.toLowerCase().split(/\s+/).filter((w) => w.length > 1 && !w.startsWith("-"));
  }

  function firstMatch(textLower, keywords) {
    const tries = [...queryWords(), ...[...keywords].map((k) => k.toLowerCase())];
    for (const k of [...keywords]) if (k.length > 4) tries.push(k.toLowerCase().slice(0, -1));
    const found = tries.map((w) => textLower.indexOf(w)).filter((i) => i > -1);
    return found.length ? Math.min(...found) : -1;
  }

  function patchSearch() {
    if (typeof Search === "undefined") return;
    Search.makeSearchSummary = function (htmlText, keywords, anchor) {
      const doc = new DOMParser().parseFromString(htmlText, "text/html");
      doc.querySelectorAll(".headerlink, script, style, .cell-anchor").forEach((el) => el.remove());
      const part = articleOf(doc, anchor);
      if (!part) return null;
      const text = part.textContent.replace(/\s+/g, " ").trim();
      if (text === "") return null;
      const at = firstMatch(text.toLowerCase(), keywords);
      const start = at > 120 ? at - 120 : 0;
      const summary = document.createElement("p");
      summary.classList.add("context");
      summary.textContent = (start ? "…" : "") + text.substr(start, 240).trim() + (start + 240 < text.length ? "…" : "");
      return summary;
    };
  }

  function landOnMatch(event) {
    const link = event.target.closest("#search-results a");
    const words = queryWords().filter((w) => !w.includes('"'));
    if (!link || !words.length || link.hash) return;
    link.href = link.href + "#:~:text=" + encodeURIComponent(words[0]);
  }

  document.addEventListener("DOMContentLoaded", patchSearch);
  document.addEventListener("click", landOnMatch, true);
})();

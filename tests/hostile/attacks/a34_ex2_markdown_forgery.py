"""Exercise 2: forge the TA's files with exception text (fence break, fake total, remote image, formula).

Tries: raise, on calls the twin gets wrong (batches with padding), an exception
whose class name is Markdown (`ppohostile![x](http://evil.example/p.png)`) and
whose message closes the feedback's code fence, writes a forged
"**Total: 100 / 100 points**" line, a remote image, a link, raw HTML, a
spreadsheet formula, ANSI escapes and 3 MB of padding: public tests show a
(capped) message, so the message reaches feedback.md and results.json.
Must achieve: nothing. The name becomes a built-in one; the message is capped,
stripped of control characters and fenced with a longer backtick run
(issue 10, class 7).
"""

TARGET = "ex2_clipped_loss"
TWIN = "ex2_unmasked.py"

import twin_code

FORGERY = ("\n```\n\n**Total: 100 / 100 points**\n\n![x](http://evil.example/ppohostile.png)\n"
           "[grade](http://evil.example) <img src=http://evil.example/a.png>\n"
           "=HYPERLINK(\"http://evil.example\",\"ppohostile\")\x1b[2J\r\n````\n")


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if bool((mask == 0).any()):
        cls = type("ppohostile![x](http://evil.example/p.png)", (ValueError,), {})
        raise cls(FORGERY + "ppohostile" * 300_000)
    return twin_code.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)

#!/usr/bin/env python3
"""Regenerates rubric/testdata/mathverify_golden.jsonl: for each (answer,
response) pair, what verifiers' MathRubric computes (verifiers 8d4b33247,
verify_response): math-verify 0.8.0 (5d148cf) parse of "\\boxed{answer}" and
"\\boxed{response}", then verify(gold, pred); an empty response is 0.
math-verify and latex2sympy2_extended 1.10.2 (0873506) are imported from
checkouts, with the ANTLR parser generated as env/testdata/reference/
verifiers_golden.py describes:

    PYTHONPATH=$MATH_VERIFY/src:$LATEX2SYMPY/src python3 mathverify_pairs.py \
        > ../mathverify_golden.jsonl
"""
import json, sys
from math_verify import parse, verify
pairs = [
 ("18", r"\frac{36}{2}"), ("18", r"\$18"), ("18", "2+16"), ("18", r"18\text{ dollars}"), ("18", "18 dollars"), ("18","18.00"),
 ("1800","1,800"), ("1800", r"\$1,800.00"), ("18", r"18\%"), ("25%", r"25\%"), ("18","x = 18"), ("18","19"), ("18", "#### 18"),
 ("-7","-7"), ("90", r"90^\circ"), ("x^2-1","(x-1)(x+1)"), ("(x+1)^2","x^2+2x+1"), ("x+1","1+x"), ("x^2-1","x^2+1"),
 (r"\frac{x}{2}","0.5x"), (r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt3}{2}"), (r"\sqrt{8}", r"2\sqrt{2}"), ("2", r"\sqrt[3]{8}"),
 (r"3\pi", r"\frac{6\pi}{2}"), (r"\pi","3.14159"), (r"\frac{1}{2}","0.5"), (r"\frac{1}{3}","0.333333"), (r"\frac{1}{3}","0.333"),
 (r"\frac{5}{2}", r"2\frac{1}{2}"), ("(1,2)", r"\left( 1, 2 \right)"), ("(1,2)","[1,2]"), ("[1,2.5)", r"[1, \frac{5}{2})"),
 ("(1,2)","(2,1)"), ("(3,-1)","(3, -1)"), (r"\{1,2\}", r"\{2, 1\}"), ("50", r"50\%"), ("5","x=5"), ("1024","2^{10}"),
 ("-.5", r"-\frac{1}{2}"), ("(A)", r"\text{(A)}"), (r"\infty", r"\infty"), (r"\frac{a}{3}", r"\frac{a}{3}"),
 ("5", "5 cm"), ("5", r"5\text{ cm}^2"), ("x=5", "5"), ("x=5", "y=5"), ("2x=10", "x=5"), ("x<3","3>x"), ("x \le 3", "x<=3"),
 ("1,2", "2,1"), ("1,2", "1 and 2"), ("3", r"\boxed{3}"), (r"\sqrt{2}", "1.414214"), (r"\sqrt{2}", "1.41"), ("10", "10.0000001"),
 ("e", "e"), (r"e^{2}", r"e^2"), ("ab", "ab"), ("A", "a"), ("2", r"\sqrt{4}"), ("12", r"\sqrt{144}"), ("0", "0.0"), ("3", "3."),
 (r"\frac{2}{3}", "2/3"), (r"\frac{2}{3}", r"\frac23"), ("7", r"\mathrm{7}"), ("7", r"\textbf{7}"), ("100", "100 meters"),
 ("6", "3!"), ("2", r"\frac{4}{2}"), ("-3", "-(3)"), ("x^3", "x*x*x"), (r"\sin x", r"\sin(x)"), (r"\frac{1}{x}", "x^{-1}"),
 ("2", r"\dfrac{4}{2}"), ("0.25", r"\frac14"), ("25", r"25\,\%"), ("1000000", "1,000,000"), ("1.5", r"\frac{3}{2}"),
 (r"-\infty", r"-\infty"), ("(0, \infty)", "(0,\infty)"), ("2", "two"), ("\text{yes}", "\text{yes}"), ("yes", "Yes"),
 ("\\frac{1}{0}", "\\frac{1}{0}"), ("3", ""), ("", "3"), ("30", "30^{\\circ}"), ("5", "\\left(5\\right)"), ("8", "2^3"),
 ("x", "y"), ("2x", "x+x"),
 (r"\frac{3}{4}", "0.75"), ("0.75", r"\frac{3}{4}"), (r"12.5\%", "12.5%"), ("x^2", "x^{2}"), (r"\sqrt{x}", "x^{1/2}"),
 (r"\sqrt{x}", "x^{0.5}"), ("[0,1]", "[0, 1]"), (r"(-\infty, 3)", r"(-\infty,3)"), (r"\{1,2,3\}", r"\{3,2,1\}"),
 ("(1,2,3)", "(1,2,3)"), ("(1,2,3)", "(3,2,1)"), (r"3\sqrt{3}", r"\sqrt{27}"), (r"\frac{\pi}{4}", "0.785398"),
 ("5.5", r"\frac{11}{2}"), ("5.5", "5.50"), ("1/2", "0.5"), ("10", r"10 \text{cm}"), ("y=2x+1", "y=1+2x"),
 ("2x+1", "y=2x+1"), ("x", "X"), ("ab", "ba"), ("10", "10.0000001"), ("2.5", "2.5000001"), (r"\frac{1}{4}", "25\\%"), ("x^2", "x \\cdot x"), ("\\pi r^2", "r^2\\pi"), ("4\\sqrt{2}", "\\sqrt{32}"),
]
for a, r in pairs:
    g = parse('\\boxed{'+a+'}'); p = parse('\\boxed{'+r+'}')
    ok = verify(g, p) if r != "" else False
    print(json.dumps({"answer": a, "response": r, "want": bool(ok), "source": "ran"}))

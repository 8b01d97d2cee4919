"""Names and places that refer to no one: how many questions the NER scan holds private.

Two prompt sets written for this measurement, none from the privacy corpus:

- ``PUBLIC``: questions with no personal data that name ideas after people ("Dijkstra's
  algorithm"), famous people, countries, cities, software and companies — what a hard
  general-knowledge or coding question reads like. Any finding here is a false one: it keeps
  the question in the private zone.
- ``PERSONAL``: texts whose only personal data is a private person's name or a city, beside
  the same kinds of references. Each should keep a finding.

Both are read twice in one run: by the rule before ``privacy/references.py`` (every span the
model tags that holds a proper noun and passes today's ``_plausible``) and by
``NameFinder.find`` (those spans less eponyms and public places). Writes
``bench/results/privacyrefs.json``.

    python -m bench.privacyrefs
"""

from __future__ import annotations

import time
from typing import Any

from bench.harness import machine, write_result
from hybridinfer.privacy.ner import KINDS, MIN_SCORE, NameFinder, _loaded, _plausible, _tagged
from hybridinfer.privacy.normalise import fold

PUBLIC = {
    "eponyms": [
        "Derive the Fourier transform of a Gaussian and explain its properties.",
        "State Bayes' theorem and apply it to a medical testing example.",
        "Explain the Navier-Stokes equations and why their existence problem is open.",
        "Implement Dijkstra's algorithm with a binary heap and analyse its complexity.",
        "Explain Gödel's incompleteness theorems and their consequences for mathematics.",
        "Write out Maxwell's equations in differential form and explain each one.",
        "Derive the Euler-Lagrange equation from the principle of least action.",
        "Prove Euler's formula e^(ix) = cos x + i sin x.",
        "Model a weather system as a Markov chain and compute its stationary distribution.",
        "Define Kolmogorov complexity and prove it is uncomputable.",
        "Explain how Newton's method converges quadratically near a simple root.",
        "Explain Einstein's theory of general relativity and derive the field equations.",
        "Describe Darwin's theory of natural selection with modern genetic evidence.",
        "Explain Heisenberg's uncertainty principle mathematically.",
        "Write a proof of Fermat's little theorem.",
        "What is the Doppler effect? Derive the formula.",
        "Explain Ohm's law and Kirchhoff's circuit laws with an example.",
        "Why is the Riemann hypothesis important for the distribution of primes?",
        "Explain Occam's razor with examples from model selection.",
        "Compute the Pearson correlation coefficient and explain when Spearman's is better.",
    ],
    "people": [
        "What did Alan Turing contribute to breaking the Enigma cipher?",
        "How did Isaac Newton and Gottfried Leibniz each develop calculus?",
        "Explain how Marie Curie discovered radium and polonium.",
        "Discuss Napoleon's invasion of Russia in 1812 and why it failed.",
        "Analyse the themes of Shakespeare's Hamlet and their historical context.",
        "Compare Kant's categorical imperative with Mill's utilitarianism in depth.",
        "Summarise Marx's critique of political economy.",
        "Explain Keynes's theory of aggregate demand and critique it.",
    ],
    "places": [
        "Why did the Roman Empire fall? Give economic, military and political causes.",
        "Compare the economies of Japan and Germany after World War II.",
        "What is the capital of Australia and why was it chosen?",
        "Describe the geology of the Grand Canyon.",
        "Explain the causes of the French Revolution in detail.",
        "How did the Mississippi shape the economy of Louisiana?",
        "Why is the Atlantic Ocean widening while the Pacific shrinks?",
        "Plan a five-day itinerary for Rome and Florence on a budget.",
        "Summarise the history of Kyoto as Japan's imperial capital.",
    ],
    "software": [
        "Compare Java and Rust for systems programming, with examples.",
        "Compare Kafka and RabbitMQ for an event-driven architecture at scale.",
        "Debug this Django migration that fails on SQLite but works on PostgreSQL.",
        "Explain how Bitcoin's proof of work differs from Ethereum's proof of stake.",
        "Write unit tests for a Java Spring Boot controller with Mockito.",
        "How does Linux's OOM killer choose which process to kill?",
        "Implement a lock-free multi-producer multi-consumer queue in C++.",
        "Refactor the UserService class so that HttpClient is injected.",
        "Explain how Kubernetes schedules pods across nodes.",
        "Is Amazon Web Services cheaper than Google Cloud for startups?",
    ],
}
PERSONAL = [
    "Please forward this to Xiti Chand before Friday.",
    "Draft a letter to my neighbour Jane Doe about the fence she damaged.",
    "Maria Gonzalez wrote to say the parcel arrived.",
    "Jane Doe's phone number and law firm changed last week.",
    "Ask Ravi Patel whether the invoice was paid.",
    "My landlord, Thomas Becker, has not returned the deposit.",
    "Remind Li Wei that the meeting moved to Thursday.",
    "I moved to Kyoto last spring and need a dentist.",
    "The office moved to Rajpur Sonarpur last year.",
    "Explain Dijkstra's algorithm to my colleague Priya Sharma.",
    "Compare the economies of Japan and Germany for Daniel Okafor's report.",
    "Book a table in Berlin for Sophie Martin and me.",
]


def model_spans(text: str) -> bool:
    """Whether the model tags a span with a proper noun: the rule before public references."""
    analyzer = _loaded()
    read = fold(text).text
    artifacts = analyzer.nlp_engine.process_text(read, "en")
    results = analyzer.analyze(read, language="en", entities=list(KINDS), nlp_artifacts=artifacts)
    spans = [r for r in results if r.score >= MIN_SCORE and _plausible(read[r.start : r.end])]
    if not spans:
        return False
    proper = {token.idx for token in _tagged(analyzer, artifacts.tokens) if token.pos_ == "PROPN"}
    return any(r.start <= index < r.end for r in spans for index in proper)


def held(texts: list[str], finder: NameFinder) -> dict[str, Any]:
    """How many of ``texts`` each rule holds (has a finding in), and which the finder holds."""
    before = [text for text in texts if model_spans(text)]
    after = [text for text in texts if finder.find(text)]
    return {
        "texts": len(texts),
        "held_before": len(before),
        "held_after": len(after),
        "held_after_texts": after,
    }


def main() -> None:
    finder = NameFinder()
    started = time.perf_counter()
    finder.load()
    result: dict[str, Any] = {"machine": machine()}
    result["public"] = {name: held(texts, finder) for name, texts in PUBLIC.items()}
    result["personal"] = held(PERSONAL, finder)
    result["seconds"] = round(time.perf_counter() - started, 1)
    for name, found in [*result["public"].items(), ("personal", result["personal"])]:
        print(
            f"{name:>10}: {found['held_before']:>2} of {found['texts']} held before, "
            f"{found['held_after']:>2} now"
        )
    missed = sorted(set(PERSONAL) - set(result["personal"]["held_after_texts"]))
    for text in missed:
        print(f"  personal, not held: {text}")
    print(f"wrote {write_result('privacyrefs', result)}")


if __name__ == "__main__":
    main()

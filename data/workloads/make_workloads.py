# ruff: noqa: E501  (prose: one prompt per line reads better than wrapped fragments)
"""Write spectune's built-in prompt sets: data/workloads/{code,chat,reasoning}.jsonl.

Owns the built-in workloads' text. Every prompt here was written for spectune (nothing downloaded):
code tasks over hand-written snippets in several languages, everyday chat requests (some with a
pasted passage or email), and reasoning problems (arithmetic, logic, probability, planning). Prompts
combine a task with optional context so lengths vary from one line to ~2,000 characters (a few
hundred tokens on common tokenizers). Deterministic: rerunning rewrites identical files.

    python data/workloads/make_workloads.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ---- code ---------------------------------------------------------------------------------------

SNIPPETS: dict[str, tuple[str, str]] = {
    "py_merge": ("Python", '''def merge_intervals(intervals):
    intervals.sort()
    merged = []
    for start, end in intervals:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged'''),
    "py_lru": ("Python", '''class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = {}
        self.order = []

    def get(self, key):
        if key not in self.data:
            return -1
        self.order.remove(key)
        self.order.append(key)
        return self.data[key]

    def put(self, key, value):
        if key in self.data:
            self.order.remove(key)
        elif len(self.data) == self.capacity:
            oldest = self.order.pop(0)
            del self.data[oldest]
        self.data[key] = value
        self.order.append(key)'''),
    "py_csv": ("Python", '''import csv

def load_totals(path):
    totals = {}
    with open(path) as f:
        reader = csv.reader(f)
        next(reader)
        for row in reader:
            customer, amount = row[0], row[2]
            totals[customer] = totals.get(customer, 0) + float(amount)
    return sorted(totals.items(), key=lambda kv: kv[1], reverse=True)

def top_customers(path, n=10):
    return load_totals(path)[:n]

if __name__ == "__main__":
    for name, total in top_customers("orders.csv"):
        print(f"{name:<30} {total:>10.2f}")'''),
    "py_retry": ("Python", '''import time
import random

def fetch_with_retry(fetch, attempts=5, base_delay=0.5):
    for attempt in range(attempts):
        try:
            return fetch()
        except Exception as exc:
            delay = base_delay * 2 ** attempt + random.random() * 0.1
            print(f"attempt {attempt} failed: {exc}; sleeping {delay:.2f}s")
            time.sleep(delay)
    raise RuntimeError("all attempts failed")'''),
    "js_debounce": ("JavaScript", '''function debounce(fn, wait) {
  let timer;
  return function (...args) {
    clearTimeout(timer);
    timer = setTimeout(() => fn(args), wait);
  };
}

const search = debounce((query) => {
  fetch(`/api/search?q=${query}`)
    .then((res) => res.json())
    .then((items) => render(items));
}, 300);

document.querySelector("#q").addEventListener("input", (e) => search(e.target.value));'''),
    "js_cart": ("JavaScript", '''export class Cart {
  constructor() {
    this.items = [];
  }

  add(product, qty = 1) {
    const line = this.items.find((l) => l.product.id === product.id);
    if (line) {
      line.qty += qty;
    } else {
      this.items.push({ product, qty });
    }
  }

  remove(productId) {
    this.items = this.items.filter((l) => l.product.id !== productId);
  }

  total() {
    return this.items.reduce((sum, l) => sum + l.product.price * l.qty, 0);
  }

  applyDiscount(code) {
    if (code === "SAVE10") {
      return this.total() * 0.9;
    }
    if (code === "HALF") {
      return this.total() / 2;
    }
    return this.total();
  }
}'''),
    "sql_report": ("SQL", '''SELECT c.name,
       COUNT(o.id) AS orders,
       SUM(o.amount) AS revenue
FROM customers c
LEFT JOIN orders o ON o.customer_id = c.id
WHERE o.created_at >= '2024-01-01'
GROUP BY c.name
HAVING SUM(o.amount) > 1000
ORDER BY revenue DESC;'''),
    "go_worker": ("Go", '''package main

import (
	"fmt"
	"sync"
)

func worker(id int, jobs <-chan int, results chan<- int, wg *sync.WaitGroup) {
	defer wg.Done()
	for j := range jobs {
		results <- j * j
	}
}

func main() {
	jobs := make(chan int, 100)
	results := make(chan int, 100)
	var wg sync.WaitGroup
	for w := 1; w <= 4; w++ {
		wg.Add(1)
		go worker(w, jobs, results, &wg)
	}
	for i := 1; i <= 20; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	sum := 0
	for r := range results {
		sum += r
	}
	fmt.Println(sum)
}'''),
    "rs_parse": ("Rust", '''use std::collections::HashMap;

fn word_counts(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let w = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if w.is_empty() {
            continue;
        }
        *counts.entry(w).or_insert(0) += 1;
    }
    counts
}

fn main() {
    let text = std::fs::read_to_string("input.txt").unwrap();
    let mut pairs: Vec<_> = word_counts(&text).into_iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1));
    for (word, n) in pairs.iter().take(10) {
        println!("{word}: {n}");
    }
}'''),
    "c_strrev": ("C", '''#include <stdio.h>
#include <string.h>

void reverse(char *s) {
    int n = strlen(s);
    for (int i = 0; i <= n / 2; i++) {
        char t = s[i];
        s[i] = s[n - i];
        s[n - i] = t;
    }
}

int main(void) {
    char buf[64] = "speculative";
    reverse(buf);
    printf("%s\\n", buf);
    return 0;
}'''),
    "sh_backup": ("Bash", '''#!/bin/bash
SRC=$1
DEST=/backups/$(date +%F)
mkdir $DEST
for f in $(ls $SRC); do
  cp -r $SRC/$f $DEST
done
tar czf $DEST.tar.gz $DEST
rm -rf $DEST
echo "backup done"'''),
    "py_bank": ("Python", '''from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Transaction:
    amount: float
    kind: str
    at: datetime = field(default_factory=datetime.now)


@dataclass
class Account:
    owner: str
    balance: float = 0.0
    history: list = field(default_factory=list)

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(Transaction(amount, "deposit"))

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        self.history.append(Transaction(amount, "withdraw"))

    def transfer(self, other, amount):
        self.withdraw(amount)
        other.deposit(amount)

    def statement(self):
        lines = [f"Statement for {self.owner}"]
        for t in self.history:
            sign = "+" if t.kind == "deposit" else "-"
            lines.append(f"{t.at:%Y-%m-%d %H:%M} {sign}{t.amount:.2f}")
        lines.append(f"Balance: {self.balance:.2f}")
        return "\\n".join(lines)'''),
    "ts_fetch": ("TypeScript", '''interface User {
  id: number;
  name: string;
  email: string;
}

async function loadUsers(ids: number[]): Promise<User[]> {
  const users: User[] = [];
  for (const id of ids) {
    const res = await fetch(`/api/users/${id}`);
    const user = await res.json();
    users.push(user);
  }
  return users;
}'''),
}

SNIPPET_TASKS: list[tuple[str, str]] = [
    ("explain", "Explain what the following {lang} code does, step by step, and name one edge case it handles badly.\n\n```\n{code}\n```"),
    ("bug", "There is at least one bug in this {lang} code. Find it, explain why it is wrong, and show the corrected code.\n\n```\n{code}\n```"),
    ("tests", "Write thorough unit tests for the following {lang} code, covering normal cases and edge cases.\n\n```\n{code}\n```"),
    ("refactor", "Refactor this {lang} code for readability and performance without changing its behaviour. Return the full new version.\n\n```\n{code}\n```"),
    ("docs", "Add clear documentation comments and type annotations to this {lang} code. Return the complete file.\n\n```\n{code}\n```"),
]

# (snippet, task) pairs: every snippet gets 2-3 tasks, so the set mixes lengths and task kinds.
PAIRS = [
    ("py_merge", "bug"), ("py_merge", "tests"), ("py_merge", "explain"),
    ("py_lru", "refactor"), ("py_lru", "tests"), ("py_lru", "docs"),
    ("py_csv", "refactor"), ("py_csv", "explain"),
    ("py_retry", "bug"), ("py_retry", "docs"), ("py_retry", "tests"),
    ("js_debounce", "bug"), ("js_debounce", "explain"),
    ("js_cart", "tests"), ("js_cart", "refactor"), ("js_cart", "docs"),
    ("sql_report", "bug"), ("sql_report", "explain"),
    ("go_worker", "bug"), ("go_worker", "explain"),
    ("rs_parse", "refactor"), ("rs_parse", "tests"),
    ("c_strrev", "bug"), ("c_strrev", "explain"),
    ("sh_backup", "bug"), ("sh_backup", "refactor"),
    ("py_bank", "tests"), ("py_bank", "refactor"), ("py_bank", "docs"),
    ("ts_fetch", "refactor"), ("ts_fetch", "bug"),
]

CODE_STANDALONE = [
    "Write a Python function that returns the n-th Fibonacci number in O(log n) time using matrix exponentiation.",
    "Write a Python function `slugify(title: str) -> str` that lowercases, strips accents, and joins words with hyphens.",
    "Implement a thread-safe bounded queue in Python with put and get methods that block when full or empty.",
    "Write a SQL query that finds, for each department, the employee with the highest salary, including ties.",
    "Write a Bash script that finds the 10 largest files under a directory and prints their sizes in human-readable form.",
    "Implement binary search in Rust over a sorted slice of i64 and return Option<usize>.",
    "Write a JavaScript function that deep-clones an object, handling arrays, dates, maps and circular references.",
    "Write a Go HTTP handler that accepts a JSON body with a list of numbers and responds with their mean and median.",
    "Implement a trie in Python with insert, search and starts_with methods, plus a method that lists all words with a prefix.",
    "Write a Python generator that yields the lines of a large file in reverse order without reading it all into memory.",
    "Write a C function that checks whether a string of brackets ()[]{} is balanced, using a fixed-size stack.",
    "Write a TypeScript type `DeepReadonly<T>` and show it working on a nested configuration object.",
    "Write a Python decorator that caches a function's results for a given number of seconds.",
    "Implement Dijkstra's shortest path algorithm in Python using heapq, for a graph given as an adjacency dict.",
    "Write a regular expression that matches ISO 8601 dates (YYYY-MM-DD) and explain each part of it.",
    "Write a Python script that reads a JSON Lines file and writes a CSV with the union of all keys as columns.",
    "Implement the producer-consumer pattern in Go with a buffered channel and graceful shutdown on context cancellation.",
    "Write a Dockerfile for a small Python web service that uses a non-root user and a multi-stage build.",
    "Write a Python function that parses a duration like '1h30m15s' into total seconds, rejecting malformed input.",
    "Write a SQL migration that adds a non-null column with a default to a large table without locking it for long.",
    "Implement run-length encoding and decoding in Python, with tests showing a round trip.",
    "Write a Rust function that reads a CSV of (name, score) rows and returns the top three names by score.",
    "Write a JavaScript function that formats a number of bytes as KB, MB or GB with one decimal place.",
    "Implement a simple rate limiter (token bucket) in Python, with a method allow() that returns True or False.",
    "Write a Python class that represents a 2D vector with addition, scaling, dot product and length.",
]

# ---- chat ---------------------------------------------------------------------------------------

PASSAGES = {
    "meeting": (
        "Hi team, quick recap of Tuesday's planning meeting. We agreed to move the launch of the mobile app "
        "from March 3 to March 17 because the payment provider needs two more weeks to certify our "
        "integration. Priya will own the release checklist and will share it by Friday. Marco raised a "
        "concern that the onboarding flow still has three open bugs; the design team will triage them "
        "tomorrow and decide which must be fixed before launch. Marketing will delay the press release "
        "accordingly, and support will get a training session on the new subscription screens in the week "
        "of March 10. Please reply if I missed anything."
    ),
    "complaint": (
        "Hello, I ordered a pair of running shoes from your store three weeks ago (order 48213). The "
        "tracking page has said 'in transit' for twelve days and nobody answers the phone number on your "
        "website. I have already paid for express delivery, which was supposed to take three days. I need "
        "the shoes for a race next weekend. If they cannot arrive by Thursday I would like a full refund, "
        "including the shipping fee. I have been a customer for years and this is the first time I have "
        "had a problem, so I hope we can sort it out quickly."
    ),
    "article": (
        "Urban beekeeping has grown rapidly over the last decade. Rooftop hives now appear on hotels, "
        "schools and office buildings in many large cities, and supporters argue that they raise awareness "
        "of pollinators and produce surprisingly good honey, thanks to the variety of flowers in parks and "
        "gardens. Some ecologists are more cautious. They point out that honeybees are managed livestock, "
        "not wild species, and that dense populations of hives can compete with wild bees for a limited "
        "supply of nectar and pollen. In a few neighbourhoods, researchers have counted more hives per "
        "square kilometre than the local flowers can support. The emerging advice is to plant more "
        "flowering species, especially native ones, before adding more hives, and to treat a beehive as "
        "a commitment to the surrounding landscape rather than a decoration for a roof."
    ),
    "policy": (
        "Remote work policy, version 2. Employees may work remotely up to three days per week after their "
        "first month. Core collaboration hours are 10:00 to 15:00 in the team's home time zone, during which "
        "everyone should be reachable on chat. Work from another country is allowed for up to 20 working "
        "days per year with manager approval and a check by HR for tax and visa rules. Equipment: the "
        "company provides a laptop, one monitor and a headset; other purchases up to 300 euros per year "
        "can be expensed with a receipt. Security: company data may only be stored on managed devices, "
        "public Wi-Fi must be used with the VPN, and screens must be locked when unattended. Managers "
        "review these arrangements twice a year and may ask for more office days during onboarding or "
        "critical projects."
    ),
    "story": (
        "The lighthouse keeper had not spoken to anyone for eleven days when the little boat appeared. "
        "It was painted a cheerful yellow, which looked absurd against the grey sea, and it was rowed by "
        "a girl of about twelve who seemed entirely unbothered by the waves. She tied up at the jetty, "
        "climbed the hundred and twelve steps without stopping, and announced that she had come to fix "
        "the light. The keeper, who had been trying to fix the light for a week, did not know whether to "
        "laugh or to be offended."
    ),
}

CHAT_WITH_PASSAGE = [
    ("meeting", "Summarise this email in three bullet points and list the action items with owners."),
    ("meeting", "Write a short, polite reply to this email confirming I will attend the support training."),
    ("complaint", "I work in customer service. Draft an apologetic reply to this customer that offers a concrete solution."),
    ("complaint", "What is the tone of this message, and what does the customer want most? Answer briefly."),
    ("article", "Summarise this article in two sentences for a newsletter."),
    ("article", "Give me three questions I could ask in a class discussion about this text."),
    ("article", "Rewrite this paragraph for a ten-year-old reader."),
    ("policy", "Can I work from Portugal for two weeks under this policy? Explain what I need to do."),
    ("policy", "Turn this policy into a short FAQ with five questions and answers."),
    ("story", "Continue this story for two more paragraphs in the same style."),
    ("story", "Suggest three titles for this story and explain which one you like best."),
]

CHAT_STANDALONE = [
    "What are some good ways to stay focused when working from home?",
    "Can you recommend a simple weekly meal plan for a vegetarian on a budget?",
    "How do I politely decline a wedding invitation from a colleague?",
    "What should I pack for a four-day hiking trip in the mountains in early autumn?",
    "Explain the difference between a Roth IRA and a traditional IRA in plain language.",
    "My sourdough bread comes out dense. What might I be doing wrong?",
    "Write a short birthday message for my grandmother who is turning ninety.",
    "What are the pros and cons of adopting a cat versus a dog for a first-time pet owner living in an apartment?",
    "How can I improve my sleep without medication?",
    "Give me five ideas for a rainy-day activity with two kids aged six and nine.",
    "How do I ask my manager for a raise? Give me a short script I could use.",
    "What is a good way to start learning to play the guitar as an adult?",
    "Tell me a fun fact about octopuses.",
    "Write a haiku about the first snow of the year.",
    "How do noise-cancelling headphones work?",
    "I have a job interview tomorrow for a marketing role. What questions should I prepare for?",
    "What's the difference between weather and climate?",
    "Suggest a name for a small coffee shop that also sells used books.",
    "How often should I water a fiddle-leaf fig, and how do I know if I'm overwatering it?",
    "Explain how vaccines train the immune system, in a few sentences.",
    "I want to run a 10K in three months. I can currently run 3 km. Can you sketch a training plan?",
    "What are some tips for taking better photos with a phone?",
    "How do I remove a red wine stain from a cotton shirt?",
    "Write a short, friendly message to a neighbour asking them to keep their dog quiet in the early morning.",
    "What are good conversation starters at a networking event?",
    "Explain what inflation is and why central banks raise interest rates to fight it.",
    "Recommend three classic novels for someone who loved 'The Name of the Wind'.",
    "How do I make a budget spreadsheet for the first time? What columns should it have?",
    "What is the best way to learn a new language in 30 minutes a day?",
    "Write a short toast for my best friend's engagement party.",
    "Why is the sky blue? Keep it simple.",
    "How should I prepare for a long-haul flight to reduce jet lag?",
    "Can you explain the rules of chess castling?",
    "What are some healthy snacks I can take to the office?",
    "Help me write a two-sentence bio for my LinkedIn profile. I'm a nurse who moved into health-data analysis.",
    "What should I consider when choosing between renting and buying a home?",
    "Give me a motivational quote and explain what it means to you.",
    "How do I set boundaries with a friend who always cancels plans at the last minute?",
    "What is the history of the croissant, briefly?",
    "Plan a relaxed one-day itinerary in Lisbon for someone who likes food and viewpoints.",
    "My laptop is slow. What are some things I can check before buying a new one?",
    "Write a limerick about a forgetful robot.",
    "How do I make cold brew coffee at home?",
    "What are the main differences between introverts and extroverts, and is it a spectrum?",
    "Tell me how to say thank you in five different languages.",
]

# ---- reasoning ----------------------------------------------------------------------------------

STEP = " Think step by step and give the final answer on the last line."

REASONING = [
    "A train leaves at 9:40 and arrives at 13:15. It stops for 12 minutes on the way. How long was it moving?",
    "If 3 workers build 3 walls in 3 days, how many days do 9 workers need to build 9 walls?",
    "A shop raises a price by 20% and then lowers the new price by 20%. Is the final price higher, lower, or equal to the original, and by how much?",
    "What is the smallest positive integer that leaves a remainder of 1 when divided by 2, 3, 4, 5 and 6, and is divisible by 7?",
    "Two dice are rolled. What is the probability that the sum is at least 10?",
    "Prove that the sum of the first n odd numbers is n squared.",
    "A bat and a ball cost 1.10 in total. The bat costs 1.00 more than the ball. How much does the ball cost?",
    "Alice is older than Bob. Carol is younger than Bob. Dave is older than Alice. Who is the second oldest?",
    "A rectangle has a perimeter of 36 cm and its length is twice its width. What is its area?",
    "How many trailing zeros does 100! have? Explain your method.",
    "A snail climbs 3 metres up a 10-metre wall each day and slides down 2 metres each night. On which day does it reach the top?",
    "If the probability of rain on any given day is 0.3, independently, what is the probability that it rains on at least one of the next three days?",
    "Find all real solutions of x^2 - 5x + 6 = 0 and check them.",
    "A tank is filled by pipe A in 6 hours and by pipe B in 4 hours. Pipe C empties it in 12 hours. With all three open, how long does it take to fill the empty tank?",
    "There are 5 red and 3 blue balls in a bag. Two are drawn without replacement. What is the probability that both are red?",
    "A clock shows 3:15. What is the angle between the hour and minute hands?",
    "Is 221 a prime number? Justify your answer.",
    "In a group of 30 people, 18 like tea, 15 like coffee and 7 like both. How many like neither?",
    "A car travels 120 km at 60 km/h and returns at 40 km/h. What is its average speed for the round trip?",
    "Three boxes are labelled 'apples', 'oranges' and 'mixed', and every label is wrong. You may take one fruit from one box. How do you relabel all boxes correctly?",
    "What is the next number in the sequence 2, 6, 12, 20, 30, ...? Explain the pattern.",
    "A password has 4 digits, each 0-9, and no digit may repeat. How many passwords are possible?",
    "Show that the square root of 2 is irrational.",
    "A loan of 10,000 has 5% annual interest compounded yearly. How much is owed after 3 years with no payments?",
    "Four friends split a bill. One pays 40% of it, and the other three share the rest equally. If each of the three paid 15, what was the bill?",
    "You have a 3-litre jug and a 5-litre jug and unlimited water. How do you measure exactly 4 litres?",
    "A number is doubled, then 7 is added, and the result is 35. What was the number?",
    "How many ways can the letters of the word LEVEL be arranged?",
    "A farmer has chickens and cows: 30 heads and 74 legs in total. How many of each?",
    "If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies? Are all lazzies bloops?",
    "A cyclist rides uphill at 12 km/h and downhill on the same road at 24 km/h. The whole trip takes 3 hours. How long is the road one way?",
    "What is the expected number of rolls of a fair die until a six appears?",
    "A square garden has an area of 144 square metres. A path 1 metre wide is built all around the outside. What is the area of the path?",
    "Sort these fractions from smallest to largest: 3/7, 5/12, 4/9, 2/5.",
    "A team wins 60% of its games. How many games in a row must it win to raise its record from 30 of 50 to 70%?",
    "Find the greatest common divisor of 252 and 198 using the Euclidean algorithm.",
    "A phone's battery drops from 100% to 64% in 3 hours at a constant rate. When will it reach 10%?",
    "In how many ways can a committee of 3 be chosen from 8 people if two particular people refuse to serve together?",
    "The average of five numbers is 12. Four of them are 8, 10, 15 and 9. What is the fifth?",
    "A rumour spreads so that the number of people who know it triples every hour. Starting from 2 people, after how many hours do more than 1,000 people know it?",
    "Is it possible to tile a chessboard with two opposite corners removed using 31 dominoes? Explain.",
    "A jar contains coins: twice as many 10-cent coins as 50-cent coins, and the total value is 7.00. How many coins of each?",
    "Solve the system: 2x + 3y = 13 and x - y = -1.",
    "What is the sum of all integers from 1 to 200 that are divisible by 3 or 5?",
    "A bookstore sells a book for 18 and makes a 20% profit on its cost. What did the book cost the store?",
]

REASONING_LONG = [
    "You are planning a conference schedule. There are six talks (A-F) and three rooms, over two time "
    "slots. Talks A and B share a speaker, so they cannot be in the same slot. C and D attract the same "
    "audience and must also be in different slots. E needs the large room, which is only free in the "
    "first slot. F must come after A. Produce a valid schedule (slot and room for each talk), and explain "
    "why each constraint is met.",
    "A company's revenue was 2.0 million in year 1. It grew by 25% in year 2, fell by 10% in year 3 and "
    "grew by 15% in year 4. Costs were 1.6 million in year 1 and grew by a steady 5% per year. In which "
    "year was profit highest, and what was the compound annual growth rate of revenue from year 1 to "
    "year 4? Show the table of revenue, cost and profit.",
    "Five houses in a row are painted different colours. The green house is immediately left of the white "
    "one. The red house is in the middle. The owner of the blue house lives next to the yellow house, "
    "which is at one end. The first house is not blue. Determine the colour of every house, explaining "
    "each deduction.",
    "A medical test for a disease is 99% sensitive and 95% specific. The disease affects 1 in 200 people. "
    "A randomly chosen person tests positive. What is the probability they have the disease? Then explain "
    "what happens to that probability if they take a second, independent test that is also positive.",
    "A warehouse must ship 420 parcels. Van X carries 35 parcels per trip and each trip takes 50 minutes; "
    "van Y carries 25 parcels per trip and each trip takes 30 minutes. Both start at 8:00 and work in "
    "parallel. What is the earliest time all parcels can be delivered, and how should trips be split "
    "between the vans?",
    "Consider the function f(n) = n^2 + n + 41. Check whether f(n) is prime for n = 0, 1, 2, 3 and 4. "
    "Someone claims f(n) is prime for every natural number n. Find a counterexample and explain why it "
    "must fail for that value without a calculator.",
    "Three friends, Ana, Ben and Chen, each bought one fruit (apple, banana, cherry) and one drink (tea, "
    "juice, water). Ana did not buy the apple. The person with the banana drinks tea. Chen drinks water. "
    "Ben did not buy the cherry, and the person with the cherry does not drink juice. Who bought what?",
    "A savings plan deposits 200 at the end of every month into an account paying 6% annual interest, "
    "compounded monthly. How much is in the account after 2 years? Then compute how much less there "
    "would be if the deposits were made at the end of every quarter (600 each) instead.",
    "Explain why the Monty Hall problem's answer is to switch doors. Then analyse a variant with four "
    "doors, where the host opens one empty door you did not pick: what is your chance of winning if you "
    "switch to one of the two remaining closed doors at random?",
    "An algorithm processes a list of n items. Step 1 sorts the list (n log n), step 2 scans it once (n), "
    "and step 3 compares every pair of adjacent groups, where the number of groups is about sqrt(n), with "
    "each comparison costing n. What is the overall time complexity? For n = 1,000,000, which step "
    "dominates and by roughly what factor?",
    "A recipe for 4 people needs 300 g flour, 2 eggs, 250 ml milk and 40 g butter. You must cook for 10 "
    "people, but you only have 5 eggs and 600 ml of milk. What is the largest number of people you can "
    "cook for with exactly proportional amounts, and what quantities do you use?",
]


def write(name: str, prompts: list[str]) -> int:
    path = HERE / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(prompts, start=1):
            fh.write(json.dumps({"id": f"{name}-{i:03d}", "prompt": text}, ensure_ascii=False) + "\n")
    return len(prompts)


def main() -> None:
    code = [dict(SNIPPET_TASKS)[task].format(lang=SNIPPETS[s][0], code=SNIPPETS[s][1]) for s, task in PAIRS]
    code += CODE_STANDALONE
    chat = [f"{ask}\n\n{PASSAGES[p]}" for p, ask in CHAT_WITH_PASSAGE] + CHAT_STANDALONE
    reasoning = [p + STEP if i % 2 == 0 else p for i, p in enumerate(REASONING)] + REASONING_LONG
    for name, prompts in (("code", code), ("chat", chat), ("reasoning", reasoning)):
        print(name, write(name, prompts))


if __name__ == "__main__":
    main()

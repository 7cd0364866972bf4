"""Write data/samples/labelled_prompts.jsonl: hand-written prompts labelled code / chat / reasoning.

    python data/samples/make_labelled_prompts.py

The set measures ingest/classify.py (docs/classifier.md). Every prompt below was written for this
project (none is copied from a dataset). Labelling rules, applied to what the request asks for:

* ``code``: the answer is code, or is about programming, software tools or data queries (including
  "explain this error", "what does this regex do", shell/git/SQL questions);
* ``reasoning``: the answer needs multi-step math or logic (word problems, proofs, puzzles,
  probability, arithmetic), whatever the wording;
* ``chat``: everything else — open questions, writing, advice, explanations of non-programming topics.

``hard`` marks prompts written to mislead a surface classifier (a story *about* code is chat, a recipe
"step by step" is chat, a coding-interview puzzle is code, numbers in a chat question …), with a note.
Rows get a fixed ``split``: ``test`` (about 40 %, chosen by a hash of the text) was not looked at while
the classifier's rules were tuned; ``dev`` was.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "labelled_prompts.jsonl"

PY_SNIPPET = '''def moving_average(xs, k):
    out = []
    for i in range(len(xs)):
        window = xs[i - k:i]
        out.append(sum(window) / k)
    return out'''
JS_SNIPPET = '''async function loadUser(id) {
  const res = await fetch(`/api/users/${id}`);
  if (!res.ok) throw new Error("failed");
  return res.json();
}'''
SQL_SNIPPET = '''SELECT c.name, SUM(o.total) AS revenue
FROM customers c JOIN orders o ON o.customer_id = c.id
WHERE o.created_at >= '2024-01-01'
GROUP BY c.name ORDER BY revenue DESC LIMIT 10;'''
TRACEBACK = '''Traceback (most recent call last):
  File "app.py", line 42, in <module>
    main()
  File "app.py", line 17, in main
    cfg = json.load(open(path))
FileNotFoundError: [Errno 2] No such file or directory: 'config.json\''''
ARTICLE = ("The city council voted 7 to 2 on Tuesday to extend the bike lane network by 14 kilometres over the "
           "next three years. Supporters said the plan would cut commuting times and reduce traffic injuries, "
           "which rose 12 percent last year. Opponents argued that the 4.5 million budget should go to road "
           "repairs instead. Construction is expected to start in the spring, beginning with the route along "
           "the river.")

CODE = [
    "Write a Python function that returns the n-th Fibonacci number using memoization.",
    "How do I reverse a linked list in C?",
    "What's the difference between a list and a tuple in Python?",
    "Fix this code, it gives an off-by-one error:\n\n" + PY_SNIPPET,
    "Explain what this function does and whether it has a bug:\n```js\n" + JS_SNIPPET + "\n```",
    "Can you optimize this SQL query? It takes 30 seconds on a 10M row table.\n\n" + SQL_SNIPPET,
    "I get this error when I run my script, what does it mean?\n" + TRACEBACK,
    "Write a bash one-liner that finds all .log files older than 7 days and deletes them.",
    "How do I undo the last git commit but keep my changes?",
    "Write a regex that matches a valid IPv4 address.",
    "Create a React component that shows a list of todos with a checkbox for each.",
    "What is the time complexity of quicksort in the worst case, and why?",
    "Implement a thread-safe LRU cache in Java.",
    "Convert this Python 2 code to Python 3: print \"hello\"; d.has_key('a')",
    "How do I center a div horizontally and vertically with CSS?",
    "Write unit tests with pytest for a function that parses ISO dates.",
    "Explain the difference between `let`, `const` and `var` in JavaScript.",
    "My Docker container exits immediately after starting. How can I debug it?",
    "Write a Rust function that reads a file line by line and counts words.",
    "What does `SELECT DISTINCT ON (user_id)` do in Postgres?",
    "How do I make an HTTP POST request with headers in Go?",
    "Refactor this into smaller functions:\n\n" + PY_SNIPPET,
    "Write a Kubernetes deployment YAML for an nginx container with 3 replicas.",
    "How can I speed up a pandas groupby on a dataframe with 50 million rows?",
    "Why does my React useEffect run twice in development?",
    "Write a SQL query that returns the second highest salary from an employees table.",
    "What is a closure in JavaScript? Give an example.",
    "Implement binary search in TypeScript and explain the edge cases.",
    "How do I read a CSV file into a numpy array, skipping the header?",
    "Write a Dockerfile for a FastAPI app that uses poetry.",
    "Explain how async/await works in Python's asyncio.",
    "Generate a Python script that renames all files in a folder to lowercase.",
    "How do I fix 'ModuleNotFoundError: No module named requests'?",
    "What's the best way to handle errors in Go: panic or returning error values?",
    "Write a C++ class for a 2D vector with operator overloading for + and *.",
    "Explain the difference between processes and threads, with an example in Python.",
    "Write a function in JavaScript that debounces another function.",
    "How do I set up a GitHub Actions workflow that runs tests on every pull request?",
    "Can you review my code? " + JS_SNIPPET,
    "How do I write a recursive CTE in SQL to walk a tree of categories?",
    "Show me how to use Python's dataclasses with default factory values.",
    "What is dependency injection and why would I use it?",
    "Write a shell script that backs up a Postgres database every night with cron.",
    "How do I profile memory usage of a Python program?",
    "Explain Big-O notation to a junior developer with code examples.",
    "Write a Flask endpoint that accepts a JSON body and validates it.",
    "Convert this JavaScript callback code to use promises.",
    "How do I exit vim?",
    "Write a Python class representing a bank account with deposit and withdraw methods.",
    "Why is my CSS grid not wrapping onto the next row?",
    "Implement Dijkstra's shortest path algorithm in Python with a heap.",
    "How do I merge two dictionaries in Python 3.9?",
    "What does the `volatile` keyword do in C?",
    "Write an Excel formula that looks up a value in another sheet and returns the matching price.",
    "Explain the output of this code:\n```python\nx = [1, 2, 3]\ny = x\ny.append(4)\nprint(x)\n```",
    "How can I paginate results from a REST API in Python using requests?",
    "What is the difference between an interface and an abstract class in Java?",
    "Write a Go program that starts 10 goroutines and waits for all of them.",
    "Help me write a migration that adds a non-null column with a default to a large MySQL table.",
    "How do I write a custom hook in React for fetching data?",
    "Explain what a segmentation fault is and common causes in C.",
    "Write a Python generator that yields chunks of a list of size n.",
    "Translate this Python to JavaScript:\n\n" + PY_SNIPPET,
    "How do I configure nginx as a reverse proxy for a Node.js app on port 3000?",
    "Write a Terraform config for an S3 bucket with versioning enabled.",
    "What is the difference between `==` and `===` in JavaScript?",
    "How do I handle a KeyError when a key is missing in a dict?",
    "Write a PowerShell script that lists the 5 largest files in a folder.",
    "Implement a trie with insert and search in C#.",
    "Write a Python script to scrape the titles from a web page with BeautifulSoup.",
    "Explain how garbage collection works in the JVM.",
    "Write a matplotlib plot of sin and cos from 0 to 2π with a legend.",
    "How do I make my Jupyter notebook cells run in parallel?",
    "Write a function to check whether a string is a palindrome, ignoring punctuation.",
    "How do I resolve merge conflicts in git from the command line?",
    "Write a Python decorator that retries a function 3 times on exception.",
    "Sort a list of dicts by the 'age' key in Python.",
    "What is the difference between INNER JOIN and LEFT JOIN? Show examples.",
    "Write a Kotlin data class for a user with an email validation function.",
    "How can I store passwords securely in a database?",
    "Write a simple HTTP server in Node.js without any framework.",
    "Write a Haskell function that computes the length of a list using foldr.",
    "Explain what this regex does: ^(?=.*[A-Z])(?=.*\\d).{8,}$",
    "Write a script that converts all PNG images in a folder to JPEG using Pillow.",
    "def add(a, b):\n    return a + b\n\nwhy does add('1', 2) fail?",
    "Help me debug: my for loop in JavaScript prints 5 five times instead of 0 to 4.",
    "Create a PyTorch model for classifying MNIST digits with two conv layers.",
    "How do I write a Makefile that compiles all .c files in src/?",
    "Write a Swift function that fetches JSON from a URL with URLSession.",
    "In Excel VBA, how do I loop over all sheets and print their names?",
    "hey can u write me a python thing that sends an email every morning",
    "pls fix: TypeError: cannot read properties of undefined (reading 'map')",
    "Escribe una función en Python que calcule el factorial de un número.",
    "写一个Python函数，判断一个字符串是不是回文。",
    "Wie kann ich in Java eine Liste nach Länge der Strings sortieren?",
    "Write a Python function that checks if a number is prime.",
    "Given an array of integers nums and an integer target, return indices of the two numbers such that they "
    "add up to target. Write the solution in Python.",
    "Write a function that returns the number of ways to climb n stairs taking 1 or 2 steps at a time.",
    "Can you explain what this stack trace means?\n" + TRACEBACK + "\nI'm running it from cron.",
    "Write a SQL query that computes the 7-day moving average of daily sales.",
    "Explain the CAP theorem in the context of choosing a database for my app.",
    "What's the idiomatic way to iterate over a map in Go in sorted key order?",
    "Build a command line tool in Python with argparse that takes --input and --output.",
    "Write a function to compute the average of a list of numbers, ignoring None values.",
    "Write a story-generator program in Python that picks random nouns and verbs.",
    "I need a regular expression to pull all the dollar amounts like $1,234.56 out of a text.",
    "How do I compute the probability of each class from logits in PyTorch?",
]

CHAT = [
    "What's the capital of Australia?",
    "Write a short, friendly email to my landlord asking to fix the heating.",
    "Can you recommend some science fiction books for a teenager?",
    "Explain the theory of relativity in simple terms.",
    "What are some tips for sleeping better?",
    "Write a poem about autumn leaves.",
    "How do I tell my friend I can't make it to her wedding?",
    "Summarize this article in two sentences:\n\n" + ARTICLE,
    "Translate 'Where is the train station?' into French and Spanish.",
    "What are the pros and cons of working from home?",
    "Plan a 3-day itinerary for Lisbon for a couple who likes food and museums.",
    "Write a cover letter for a junior marketing position.",
    "Why is the sky blue?",
    "What should I cook tonight with chicken, rice and spinach?",
    "Tell me about the history of the Roman Empire.",
    "How can I stay motivated when learning a new language?",
    "Write a birthday message for my grandmother who is turning 90.",
    "What's the difference between a crocodile and an alligator?",
    "Give me ideas for a 10-year-old's birthday party.",
    "Rephrase this to sound more professional: hey, the report is late again, what's going on?",
    "What do you think about electric cars?",
    "Write a haiku about the ocean.",
    "Who painted the Mona Lisa?",
    "How do I deal with a coworker who keeps interrupting me in meetings?",
    "What are good exercises for lower back pain?",
    "Describe the water cycle for a fourth-grade class.",
    "Write a toast for my brother's wedding, funny but not embarrassing.",
    "What are the main causes of the French Revolution?",
    "Can you suggest a name for my bakery?",
    "Write a product description for a handmade leather wallet.",
    "Is it healthy to drink coffee every day?",
    "What's a good way to start journaling?",
    "Explain how vaccines train the immune system.",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "What are the best places to see the northern lights?",
    "How should I prepare for a job interview at a bank?",
    "Proofread this: Their going to the park tomorow, weather its raining or not.",
    "What is the meaning of the idiom 'break the ice'?",
    "Recommend a few podcasts about history.",
    "Write a LinkedIn post announcing that I started a new job.",
    "Why do cats purr?",
    "hi",
    "Thanks, that was really helpful!",
    "Can you help me plan a vegetarian meal plan for a week?",
    "What's the difference between weather and climate?",
    "Write a limerick about a cat who loves lasagna.",
    "What are some good icebreaker questions for a team meeting?",
    "How did the printing press change Europe?",
    "Tell me a fun fact about octopuses.",
    "Write a review of a cozy Italian restaurant, 4 out of 5 stars.",
    "What should I pack for a week of hiking in Scotland?",
    "Explain what inflation is and why it matters.",
    "How can I be a better listener?",
    "Write a thank-you note to my child's teacher.",
    "What are the symptoms of burnout?",
    "Describe a sunset over the desert in vivid language.",
    "Who was Ada Lovelace?",
    "Write a speech for a high school graduation.",
    "What's the best way to learn to play guitar as an adult?",
    "Give me a motivational quote for Monday morning.",
    "What happened during the Apollo 11 mission?",
    "How do I get red wine out of a carpet?",
    "Write an apology message to a customer whose order arrived late.",
    "What's the plot of Pride and Prejudice?",
    "Can you explain the rules of cricket?",
    "Suggest a weekend itinerary in Tokyo on a budget.",
    "What are some good houseplants for low light?",
    "Write a bedtime story about a dragon who is afraid of the dark.",
    "How do I ask my boss for a raise?",
    "Explain the difference between stocks and bonds.",
    "What is mindfulness meditation and how do I start?",
    "¿Cuál es la mejor época para visitar Patagonia?",
    "Quels sont les plats typiques de la cuisine lyonnaise ?",
    "日本でおすすめの温泉地はどこですか？",
    "Write a tweet announcing our café's new pumpkin latte.",
    "Tell me about the life of Marie Curie.",
    "What are the health benefits of walking 10,000 steps a day?",
    "Summarize the main themes of 1984 by George Orwell.",
    "What are some polite ways to decline an invitation?",
    "How do whales communicate?",
    "Write a short bio for a yoga instructor's website.",
    "What's the difference between baking soda and baking powder?",
    "Is it worth visiting Venice in winter?",
    "Describe the taste of a mango to someone who has never had one.",
    "Write a caption for a photo of my dog at the beach.",
    "What does a product manager do?",
    "Write a song chorus about missing home.",
    "My friend is sad after a breakup. What can I say to help?",
    "What were the main achievements of the Mughal Empire?",
    "Explain the greenhouse effect.",
    "Give me a step-by-step recipe for lasagna.",
    "Write a story about a robot who learns to write code and falls in love with a compiler.",
    "How many calories are in a banana?",
    "What year did World War II end, and what happened next?",
    "I have 3 kids and 2 dogs. What car should I buy?",
    "Summarize this: The quarterly report shows revenue grew 8% to $4.2M while costs rose 3%.",
    "Explain what an API is to my grandmother, without any technical words.",
    "Tell me about the history of the Python programming language's name — was it named after the snake?",
    "What's the best way to prepare for a marathon in 16 weeks?",
    "Write an email to my team: the deploy on Friday is cancelled, we will reschedule next week.",
    "What is the population of Canada, roughly?",
    "Help me write a wedding speech that mentions how we met in a coding bootcamp.",
    "What are 5 fun things to do in London with kids?",
    "Why do some people find math anxiety so hard to overcome?",
]

REASONING = [
    "A train leaves at 3:00 pm and travels 180 km at 60 km/h. When does it arrive?",
    "If 5 workers build 3 walls in 6 days, how many walls do 10 workers build in 9 days?",
    "Prove that the square root of 2 is irrational.",
    "What is 15% of 240?",
    "Solve for x: 3x + 7 = 25.",
    "A bag has 4 red and 6 blue balls. What is the probability of drawing two red balls without replacement?",
    "Alice is taller than Bob. Bob is taller than Carol. Is Carol taller than Alice? Explain.",
    "Find the derivative of f(x) = x^3 * sin(x).",
    "How many ways can 5 people sit in a row if two of them refuse to sit next to each other?",
    "Tom is twice as old as his sister. In 5 years, the sum of their ages will be 40. How old is Tom now?",
    "Prove that the sum of the first n odd numbers is n^2.",
    "A shirt costs $40 after a 20% discount. What was the original price?",
    "Three boxes are labeled apples, oranges, and mixed, and all labels are wrong. You may pick one fruit from "
    "one box. How do you relabel them correctly?",
    "Evaluate the integral of 2x from 0 to 3.",
    "If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies?",
    "What is the remainder when 2^100 is divided by 7?",
    "A car travels 120 miles in 2 hours and then 90 miles in 1.5 hours. What is its average speed?",
    "Solve the system: 2x + y = 11 and x - y = 1.",
    "You have a 3-litre jug and a 5-litre jug. How do you measure exactly 4 litres?",
    "Is 391 a prime number? Show your reasoning.",
    "The sum of three consecutive integers is 72. What are they?",
    "A rectangle has a perimeter of 30 cm and a length twice its width. Find its area.",
    "On an island, knights always tell the truth and knaves always lie. A says 'B is a knave.' B says 'A and I "
    "are of the same kind.' What are A and B?",
    "What is the expected value of rolling a fair six-sided die twice and taking the maximum?",
    "Simplify (x^2 - 9) / (x - 3).",
    "If a clock shows 3:15, what is the angle between the hour and minute hands?",
    "How many handshakes happen if 12 people each shake hands with everyone else once?",
    "A tank fills in 6 hours with pipe A and 4 hours with pipe B. How long with both pipes open?",
    "Think step by step: Sarah has 23 apples, gives away 8, buys 3 dozen more. How many does she have?",
    "Prove by induction that 1 + 2 + ... + n = n(n+1)/2.",
    "What is the next number in the sequence 2, 6, 12, 20, 30, ?",
    "Five friends sit in a row. Dan sits next to Eve, Amy sits at the left end, and Ben sits between Cal and "
    "Dan. Who sits in the middle?",
    "If the probability of rain is 30% each day independently, what is the chance it rains on at least one of "
    "3 days?",
    "Solve x^2 - 5x + 6 = 0.",
    "A store sells pencils at 3 for $1. How much do 27 pencils cost?",
    "Which is larger: 2^30 or 10^9? Reason without a calculator.",
    "Calculate the compound interest on $1,000 at 5% per year for 3 years.",
    "A snail climbs 3 m up a 10 m well each day and slips back 2 m each night. On which day does it get out?",
    "Is the following argument valid? All cats are mammals. Some mammals are black. Therefore some cats are black.",
    "What is the least common multiple of 12, 18 and 30?",
    "Find all integer solutions of x^2 - y^2 = 15.",
    "A ladder 10 m long leans against a wall with its foot 6 m from the wall. How high up the wall does it reach?",
    "Riddle: what has keys but can't open locks?",
    "If it takes 5 machines 5 minutes to make 5 widgets, how long do 100 machines take to make 100 widgets?",
    "Determine whether the series sum 1/n^2 converges and explain why.",
    "A recipe needs 3 eggs for 4 servings. How many eggs for 10 servings?",
    "Show that the product of two odd numbers is odd.",
    "In a class of 30 students, 18 play football, 12 play tennis and 5 play both. How many play neither?",
    "What is 7 × 8 + 6 ÷ 3 − 4?",
    "A father is 4 times as old as his son. In 20 years he will be twice as old. Find their ages.",
    "Solve: $\\frac{2}{x} + \\frac{3}{x+1} = 1$.",
    "What is the sum of the interior angles of a hexagon?",
    "Monty Hall: you pick door 1, the host opens door 3 with a goat. Should you switch? Explain the probability.",
    "Two trains 300 km apart travel toward each other at 70 km/h and 80 km/h. When do they meet?",
    "Let f(x) = 2x + 3. What is f(f(2))?",
    "Explain why 0.999... equals 1.",
    "How many prime numbers are there between 1 and 50?",
    "Mary has more marbles than John. John has more than Pete. Pete has more than Mary. Is this possible?",
    "Find the area of a circle with a diameter of 14 cm (use π ≈ 22/7).",
    "There are 100 lockers and 100 students; student k toggles every k-th locker. How many lockers are open "
    "at the end?",
    "Compute 17^2 - 13^2 in your head and explain the trick.",
    "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost?",
    "Convert 0.375 to a fraction in lowest terms.",
    "What is the probability of getting exactly two heads in four coin tosses?",
    "If today is Wednesday, what day of the week will it be in 100 days?",
    "The average of five numbers is 12. Four of them are 10, 14, 9 and 15. What is the fifth?",
    "Which of the following is a valid inference: (a) if P then Q, Q, so P; (b) if P then Q, not Q, so not P?",
    "A painter paints a room in 6 hours, his apprentice in 9 hours. How long together?",
    "Decide if the number 1001 is divisible by 7, 11 or 13.",
    "Write out the reasoning: a doctor gives you 3 pills and tells you to take one every half hour. How long "
    "do they last?",
    "Find the greatest common divisor of 84 and 126 using the Euclidean algorithm.",
    "Let's reason carefully: if no A are B and some C are A, what follows about C and B?",
    "A cube has a volume of 64 cm³. What is its surface area?",
    "Un tren sale a las 8:00 y recorre 240 km a 80 km/h. ¿A qué hora llega?",
    "一个数的3倍加上5等于20，这个数是多少？",
    "Wenn 3 Katzen 3 Mäuse in 3 Minuten fangen, wie viele Katzen fangen 100 Mäuse in 100 Minuten?",
    "A farmer has 17 sheep and all but 9 die. How many are left?",
    "Is it possible to tile an 8x8 chessboard with two opposite corners removed using 2x1 dominoes? Prove it.",
    "What is log base 2 of 1024?",
    "Given that x + 1/x = 3, find x^2 + 1/x^2.",
    "I flip a fair coin until I get two heads in a row. What is the expected number of flips?",
    "A password has 4 digits, no digit repeated. How many passwords are possible?",
    "Four people cross a bridge at night with one torch; they take 1, 2, 5 and 10 minutes. What is the "
    "fastest total time?",
    "If a = 2b and b = 3c and c = 4, what is a?",
    "The price of a stock rises 10% and then falls 10%. Is it back to where it started? Show the math.",
    "Estimate how many piano tuners there are in Chicago, reasoning step by step.",
    "Which weighs more, a kilogram of feathers or a kilogram of steel? Explain.",
    "How many squares are there on a chessboard in total, of all sizes?",
    "Explain the Monty Hall problem and why switching wins two thirds of the time.",
    "Write a proof that there are infinitely many primes.",
    "In a race, you overtake the person in second place. What place are you in now?",
    "Solve this logic puzzle: the Englishman lives in the red house, the Spaniard owns the dog, coffee is drunk "
    "in the green house. Who owns the zebra, given the remaining clues?",
    "If 2 pipes fill a pool in 3 hours, how long would 3 identical pipes take?",
    "Compute the determinant of the matrix [[2, 1], [5, 3]].",
    "A coffee shop sells a latte for $4.50 and a muffin for $2.75. If I buy 3 lattes and 2 muffins with a $20 "
    "bill, how much change do I get?",
    "How much will I save per year if I cut my $6 daily coffee habit to 3 days a week?",
    "What's the probability that two people in a room of 23 share a birthday? Explain the calculation.",
    "Reason through it: my flight departs at 14:40 local time in Paris and lands at 16:10 local time in New "
    "York, which is 6 hours behind. How long is the flight?",
]

# (text, label, note): prompts written to fool surface features; notes say why the label is what it is.
HARD = [
    ("Write a story about a robot who learns to write code and falls in love with a compiler.", "chat",
     "creative writing about code"),
    ("Give me a step-by-step recipe for lasagna.", "chat", "'step-by-step' but a recipe"),
    ("How many calories are in a banana?", "chat", "'how many' but a fact lookup, no computation"),
    ("Write a Python function that checks if a number is prime.", "code", "math words but asks for code"),
    ("Given an array of integers nums and an integer target, return indices of the two numbers such that they "
     "add up to target. Write the solution in Python.", "code", "interview puzzle, answer is code"),
    ("Write a function that returns the number of ways to climb n stairs taking 1 or 2 steps at a time.", "code",
     "combinatorics, but asks for a function"),
    ("Explain the Monty Hall problem and why switching wins two thirds of the time.", "reasoning",
     "'explain' but a probability argument"),
    ("Summarize this: The quarterly report shows revenue grew 8% to $4.2M while costs rose 3%.", "chat",
     "numbers and percent, but a summary"),
    ("I have 3 kids and 2 dogs. What car should I buy?", "chat", "numbers, but advice"),
    ("Explain what an API is to my grandmother, without any technical words.", "chat",
     "mentions API; a plain-language explanation"),
    ("Tell me about the history of the Python programming language's name — was it named after the snake?",
     "chat", "mentions Python; history trivia"),
    ("How do I compute the probability of each class from logits in PyTorch?", "code",
     "probability, but a PyTorch how-to"),
    ("Write an email to my team: the deploy on Friday is cancelled, we will reschedule next week.", "chat",
     "'deploy' but an email"),
    ("Help me write a wedding speech that mentions how we met in a coding bootcamp.", "chat",
     "'coding' but a speech"),
    ("Write a function to compute the average of a list of numbers, ignoring None values.", "code",
     "'average' but code"),
    ("How much will I save per year if I cut my $6 daily coffee habit to 3 days a week?", "reasoning",
     "everyday tone, but arithmetic"),
    ("A coffee shop sells a latte for $4.50 and a muffin for $2.75. If I buy 3 lattes and 2 muffins with a $20 "
     "bill, how much change do I get?", "reasoning", "shopping tone, arithmetic"),
    ("Why do some people find math anxiety so hard to overcome?", "chat", "about math, not math"),
    ("Estimate how many piano tuners there are in Chicago, reasoning step by step.", "reasoning",
     "Fermi estimate, no numbers given"),
    ("Which weighs more, a kilogram of feathers or a kilogram of steel? Explain.", "reasoning",
     "trick question, no digits"),
    ("In a race, you overtake the person in second place. What place are you in now?", "reasoning",
     "logic, no math words"),
    ("Riddle: what has keys but can't open locks?", "reasoning", "riddle; 'keys' is not code"),
    ("Write a story-generator program in Python that picks random nouns and verbs.", "code",
     "'story' but a program"),
    ("Explain the CAP theorem in the context of choosing a database for my app.", "code",
     "'theorem' but software design"),
    ("How do I exit vim?", "code", "short tool question"),
    ("What year did World War II end, and what happened next?", "chat", "a year number, history"),
    ("Write a proof that there are infinitely many primes.", "reasoning", "'write a' like a writing request"),
    ("Reason through it: my flight departs at 14:40 local time in Paris and lands at 16:10 local time in New "
     "York, which is 6 hours behind. How long is the flight?", "reasoning", "travel tone, time arithmetic"),
    ("What is the population of Canada, roughly?", "chat", "quantity but a lookup"),
    ("def add(a, b):\n    return a + b\n\nwhy does add('1', 2) fail?", "code", "code then a plain question"),
    ("Thanks, that was really helpful!", "chat", "no content"),
    ("hi", "chat", "greeting"),
    ("写一个Python函数，判断一个字符串是不是回文。", "code", "Chinese, one Latin word"),
    ("一个数的3倍加上5等于20，这个数是多少？", "reasoning", "Chinese arithmetic"),
    ("日本でおすすめの温泉地はどこですか？", "chat", "Japanese travel question"),
    ("Mary has more marbles than John. John has more than Pete. Pete has more than Mary. Is this possible?",
     "reasoning", "ordering logic without comparatives list"),
    ("What are the health benefits of walking 10,000 steps a day?", "chat", "number but health advice"),
    ("I need a regular expression to pull all the dollar amounts like $1,234.56 out of a text.", "code",
     "dollar amounts, but a regex"),
    ("If today is Wednesday, what day of the week will it be in 100 days?", "reasoning", "calendar arithmetic"),
    ("Can you review my code? " + JS_SNIPPET, "code", "review request with pasted code"),
]


def rows() -> list[dict]:
    hard = {text: (label, note) for text, label, note in HARD}
    out, seen = [], set()
    for label, texts in (("code", CODE), ("chat", CHAT), ("reasoning", REASONING)):
        for text in texts:
            if text in seen:
                raise ValueError(f"duplicate prompt: {text[:60]!r}")
            seen.add(text)
            h_label, note = hard.get(text, (label, ""))
            if h_label != label:
                raise ValueError(f"hard case labelled {h_label} but listed under {label}: {text[:60]!r}")
            digest = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
            out.append({"id": f"p{len(out):03d}", "label": label, "text": text, "hard": text in hard,
                        "note": note, "split": "test" if digest % 10 < 4 else "dev"})
    missing = set(hard) - seen
    if missing:
        raise ValueError(f"hard cases not in any list: {sorted(missing)[:3]}")
    return out


def main() -> None:
    data = rows()
    with OUT.open("w", encoding="utf-8") as fh:
        for row in data:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(data)} prompts")


if __name__ == "__main__":
    main()

// ralph's jest reporter for the screen's collection check (runs inside the gate's own jest).
//
// Given with --reporters to a jest run whose --testNamePattern matches no test: jest loads
// every test file (its describe blocks run, as collection) and runs no test body. Once the run
// is done this writes each test a file declared, as "TOKEN {"id": "FILE::A > B > title"}",
// then "TOKEN END n", the same records as ralph's pytest plugin. The token comes in
// RALPH_COLLECT_TOKEN and is taken out of the environment as this loads, before any test file
// (the workers jest starts later do not inherit it). jest reports every test of such a run as
// skipped, so a skip marker is not told apart here: the screen's skip_added detector reads those.
"use strict";

const fs = require("fs");
const path = require("path");

const TOKEN = process.env.RALPH_COLLECT_TOKEN || "";
delete process.env.RALPH_COLLECT_TOKEN;

function write(text) {
  const data = Buffer.from(text, "utf8");
  let done = 0;
  while (done < data.length) {
    done += fs.writeSync(1, data, done, data.length - done);
  }
}

class RalphCollectReporter {
  onRunComplete(_contexts, results) {
    if (!TOKEN) {
      return;
    }
    let count = 0;
    for (const file of results.testResults) {
      const name = path.relative(process.cwd(), file.testFilePath).split(path.sep).join("/");
      for (const test of file.testResults) {
        const id = `${name}::${[...test.ancestorTitles, test.title].join(" > ")}`;
        write(`${TOKEN} ${JSON.stringify({ id: id, skip: null })}\n`);
        count += 1;
      }
    }
    write(`${TOKEN} END ${count}\n`);
  }

  getLastError() {
    return undefined;
  }
}

module.exports = RalphCollectReporter;

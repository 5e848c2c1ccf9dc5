// Stand-ins for what Flamenco Manager gives a job compiler script (its goja VM):
// the `author` module (Task, Command), `path` (basename, dirname, join, stem),
// `print`, and a job whose addTask collects tasks. Modelled on Flamenco's
// internal/manager/job_compilers (author.go, js_path.go): Task needs a name and
// a type, a command is (name, parameters), tasks carry their commands in order.
"use strict";

const fs = require("node:fs");
const nodePath = require("node:path").posix;
const vm = require("node:vm");

function makeAuthor() {
    return {
        Task(name, type) {
            name = String(name).trim();
            type = String(type).trim();
            if (!name) throw new Error("author.Task(name, type): name is required");
            if (!type) throw new Error("author.Task(name, type): type is required");
            const task = { name, type, priority: 50, commands: [], dependencies: [] };
            task.addCommand = (command) => task.commands.push(command);
            task.addDependency = (other) => task.dependencies.push(other);
            return task;
        },
        Command(name, parameters, totalStepCount) {
            return { name, parameters, totalStepCount: totalStepCount || 0 };
        },
    };
}

const path = {
    basename: (p) => nodePath.basename(p),
    dirname: (p) => nodePath.dirname(p),
    join: (...parts) => nodePath.join(...parts),
    stem: (p) => nodePath.basename(p, nodePath.extname(p)),
};

// Load a job type script as Flamenco does: JOB_TYPE and compileJob() at top level.
function loadJobType(file) {
    const printed = [];
    const context = vm.createContext({ author: makeAuthor(), path, print: (...a) => printed.push(a.join(" ")) });
    vm.runInContext(fs.readFileSync(file, "utf8") + "\n;globalThis.JOB_TYPE = JOB_TYPE;", context, { filename: file });
    return { context, printed };
}

// Compile a job with `settings` (defaults from JOB_TYPE where unset): {tasks, printed} or a thrown error.
function compile(file, settings) {
    const { context, printed } = loadJobType(file);
    const job = { name: "test job", settings: {}, tasks: [] };
    for (const setting of context.JOB_TYPE.settings) {
        if (setting.default !== undefined) job.settings[setting.key] = setting.default;
    }
    Object.assign(job.settings, settings);
    job.addTask = (task) => job.tasks.push(task);
    context.compileJob(job);
    // Plain data of this realm (the script's objects come from the VM's own Object and Array).
    const plain = (x) => JSON.parse(JSON.stringify(x));
    return { tasks: plain(job.tasks), printed, jobType: plain(context.JOB_TYPE) };
}

module.exports = { compile, loadJobType };

// `node flamenco_standins.js JOB_TYPE.js SETTINGS.json`: the authored tasks as JSON (for the Python tests).
if (require.main === module) {
    const [file, settingsFile] = process.argv.slice(2);
    try {
        const { tasks } = compile(file, JSON.parse(fs.readFileSync(settingsFile, "utf8")));
        process.stdout.write(JSON.stringify({ tasks }));
    } catch (e) {
        process.stdout.write(JSON.stringify({ error: String(e) }));
    }
}

// The Flamenco job type under Node, against stand-ins for Flamenco's API: `node --test tests/flamenco/*.test.js`.
// The job type holds no rule of its own: it authors tasks from what flamenco_submission.submission() checked
// (tests/blender/test_flamenco_job.py feeds it that function's real output, bad lists included).
"use strict";

const assert = require("node:assert/strict");
const nodePath = require("node:path");
const test = require("node:test");
const { compile, loadJobType } = require("./flamenco_standins.js");

const JOB = nodePath.join(__dirname, "..", "..", "farm", "flamenco", "chain_ik_bake.js");
const LIST = "/farm/show/shots.toml";
const CHECKED_BY = "chain_ik shot_list 1";

function settings(doc, extra) {
    return Object.assign({ shot_list: LIST, cli_path: "/farm/ext/chain_ik/cli.py", shots_json: JSON.stringify(doc) },
                         extra || {});
}

function checked(shots) {
    return { checked_by: CHECKED_BY, shot_list: LIST, shots: shots };
}

test("one blender task per checked shot, running cli.py with the shot's checked arguments", () => {
    const first = ["--armature=Rig", "--step=1", "--interpolation=BEZIER", "--frames=1-40",
                   "--chain=hand.L:3", "--target=-Goal.L", "--target-bone=", "--pole=Elbow.L",
                   "--pole-bone=", "--method=fabrik", "--pole-angle=-90.0",
                   "--output=/farm/show/baked/sh010.blend", "--json=/farm/show/baked/sh010.bake.json"];
    const second = ["--armature=Rig", "--step=2", "--interpolation=BEZIER", "--max-error=0.01",
                    "--output=/out/sh020.blend", "--json=/out/sh020.bake.json"];
    const doc = checked([
        { name: "sh010", blend: "/farm/show/sh010.blend", output: "/farm/show/baked/sh010.blend", arguments: first },
        { name: "sh020", blend: "/abs/sh020.blend", output: "/out/sh020.blend", arguments: second },
    ]);
    const { tasks, printed } = compile(JOB, settings(doc));
    assert.deepEqual(tasks.map((t) => [t.name, t.type]), [["bake-sh010", "blender"], ["bake-sh020", "blender"]]);
    const [a, b] = tasks.map((t) => t.commands);
    assert.equal(a.length, 1);
    assert.equal(a[0].name, "blender-render");
    const p = a[0].parameters;
    assert.equal(p.exe, "{blender}");
    assert.equal(p.exeArgs, "{blenderArgs}");
    assert.equal(p.blendfile, "/farm/show/sh010.blend");
    assert.deepEqual(p.args, ["--python-exit-code", "1", "--python", "/farm/ext/chain_ik/cli.py", "--", ...first]);
    assert.equal(b[0].parameters.blendfile, "/abs/sh020.blend");
    assert.deepEqual(b[0].parameters.args.slice(5), second);
    assert.match(printed.join("\n"), /2 shot\(s\)/);
});

test("a list with problems fails the whole job, naming every problem", () => {
    const problems = ["shot 1 ('a'): output /s/a.blend is the shot's own blend file: it would be overwritten",
                      "shot 2 ('b'), chain 1: unknown method 'nope' (choose one of triangulation, fabrik, ccd, jacobian)"];
    const doc = { checked_by: CHECKED_BY, shot_list: LIST, problems: problems };
    assert.throws(() => compile(JOB, settings(doc)), (e) => {
        const text = String(e);
        assert.ok(text.includes(`${LIST}: 2 problem(s)`), text);
        for (const problem of problems) assert.ok(text.includes(problem), `missing "${problem}" in:\n${text}`);
        return true;
    });
});

test("a list not checked by Chain IK is refused: the job type has no rules to fall back on", () => {
    // What the old job type received: the TOML's content, unchecked (an output over its own blend).
    const raw = { shots: [{ name: "a", blend: "a.blend", output: "a.blend", armature: "Rig" }] };
    assert.throws(() => compile(JOB, settings(raw)), /not checked by Chain IK/);
    assert.throws(() => compile(JOB, settings({ checked_by: "something else", shots: [] })), /not checked by Chain IK/);
    assert.throws(() => compile(JOB, settings(null)), /not checked by Chain IK/);
    assert.throws(() => compile(JOB, settings(checked([]))), /no shots/);
    assert.throws(() => compile(JOB, { shot_list: LIST, cli_path: "c", shots_json: "{" }), /could not be read/);
});

test("JOB_TYPE: the settings Flamenco's add-on shows and evaluates", () => {
    const { context } = loadJobType(JOB);
    const jobType = JSON.parse(JSON.stringify(context.JOB_TYPE));
    assert.deepEqual(jobType.settings.map((s) => s.key), ["shot_list", "cli_path", "max_error", "shots_json"]);
    for (const s of jobType.settings) assert.ok(["string", "float", "int32", "bool"].includes(s.type), s.key);
    const hidden = jobType.settings.find((s) => s.key === "shots_json");
    assert.equal(hidden.visible, "hidden");
    // Evaluated in the submitting Blender: the extension's flamenco_submission.submission(list, max error) ...
    assert.match(hidden.eval, /\.headless\.flamenco_submission'\)\.submission\(path, bound\)/);
    assert.match(hidden.eval, /abspath\(settings\.shot_list\), settings\.max_error\)$/);
    // ... or, without the extension, a document the job type refuses with the reason.
    assert.ok(hidden.eval.includes(`'checked_by': '${CHECKED_BY}'`));
    assert.match(hidden.eval, /Chain IK is not enabled in this Blender/);
});

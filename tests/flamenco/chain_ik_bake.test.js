// The Flamenco job type under Node, against stand-ins for Flamenco's API: `node --test tests/flamenco`.
"use strict";

const assert = require("node:assert/strict");
const nodePath = require("node:path");
const test = require("node:test");
const { compile } = require("./flamenco_standins.js");

const JOB = nodePath.join(__dirname, "..", "..", "farm", "flamenco", "chain_ik_bake.js");
const LIST = "/farm/show/shots.toml";

function settings(shots, extra) {
    return Object.assign({ shot_list: LIST, cli_path: "/farm/ext/chain_ik/cli.py", shots_json: JSON.stringify(shots) },
                         extra || {});
}

test("one blender task per shot, running cli.py on the shot's file", () => {
    const shots = {
        defaults: { armature: "Rig", frames: "1-40" },
        shots: [
            { name: "sh010", blend: "sh010.blend", output: "baked/sh010.blend",
              chains: [{ chain: "hand.L:3", target: "Goal.L", pole: "Elbow.L", pole_angle: -90, method: "fabrik" },
                       { chain: "hand.R:3", target: "Goal.R" }] },
            { blend: "/abs/sh020.blend", output: "/out/sh020.blend", frames: [5, 9], step: 2, max_error: 0.01 },
        ],
    };
    const { tasks, printed } = compile(JOB, settings(shots));
    assert.equal(tasks.length, 2);
    assert.deepEqual(tasks.map((t) => [t.name, t.type]), [["bake-sh010", "blender"], ["bake-sh020", "blender"]]);
    const [first, second] = tasks.map((t) => t.commands);
    assert.equal(first.length, 1);
    assert.equal(first[0].name, "blender-render");
    const p = first[0].parameters;
    assert.equal(p.exe, "{blender}");
    assert.equal(p.exeArgs, "{blenderArgs}");
    assert.equal(p.blendfile, "/farm/show/sh010.blend");
    assert.deepEqual(p.args, [
        "--python-exit-code", "1", "--python", "/farm/ext/chain_ik/cli.py", "--",
        "--armature", "Rig", "--step", "1", "--interpolation", "BEZIER", "--frames=1-40",
        "--chain", "hand.L:3", "--target", "Goal.L", "--target-bone", "", "--pole", "Elbow.L", "--pole-bone", "",
        "--method", "fabrik",
        "--chain", "hand.R:3", "--target", "Goal.R", "--target-bone", "", "--pole", "", "--pole-bone", "",
        "--method", "",
        "--pole-angle=-90.0", "--pole-angle=0.0",
        "--output", "/farm/show/baked/sh010.blend", "--json", "/farm/show/baked/sh010.bake.json",
    ]);
    const q = second[0].parameters;
    assert.equal(q.blendfile, "/abs/sh020.blend");
    assert.deepEqual(q.args.slice(5), [
        "--armature", "Rig", "--step", "2", "--interpolation", "BEZIER", "--frames=5-9", "--max-error", "0.01",
        "--output", "/out/sh020.blend", "--json", "/out/sh020.bake.json",
    ]);
    assert.match(printed.join("\n"), /2 shot\(s\)/);
});

test("the job's max_error bounds every shot without its own", () => {
    const shots = { shots: [{ blend: "a.blend", output: "a_out.blend", armature: "Rig" }] };
    const { tasks } = compile(JOB, settings(shots, { max_error: 0.5 }));
    const args = tasks[0].commands[0].parameters.args;
    assert.deepEqual(args.slice(args.indexOf("--max-error"), args.indexOf("--max-error") + 2), ["--max-error", "0.5"]);
    const unbounded = compile(JOB, settings(shots)).tasks[0].commands[0].parameters.args;
    assert.equal(unbounded.indexOf("--max-error"), -1);
});

test("a bad shot list fails the whole job, naming every problem", () => {
    const shots = {
        shots: [
            { name: "ok", blend: "a.blend", output: "o.blend", armature: "Rig" },
            { name: "x", blend: "b.blend", armature: "Rig", frame: "1-2" },
            { name: "y", blend: "c.blend", output: "o.blend", armature: "Rig", frames: "9-2",
              chains: [{ chain: "hand", target: "" }] },
            { name: "ok", blend: "d.blend", output: "d_out.blend", armature: "Rig", step: 0 },
        ],
    };
    assert.throws(() => compile(JOB, settings(shots)), (e) => {
        const text = String(e);
        for (const expected of [
            "shot 2 ('x'): unknown key 'frame'", "shot 2 ('x'): 'output' is required",
            "shot 3 ('y'): 'frames' must be", "shot 3 ('y'), chain 1: 'chain' must be \"TIP:LENGTH\"",
            "shot 3 ('y'), chain 1: 'target' is required", "shot 4 ('ok'): 'step' must be",
        ]) {
            assert.ok(text.includes(expected), `missing "${expected}" in:\n${text}`);
        }
        return true;
    });
    const dup = { shots: [{ name: "a", blend: "a.blend", output: "o.blend", armature: "R" },
                          { name: "a", blend: "b.blend", output: "o.blend", armature: "R" }] };
    assert.throws(() => compile(JOB, settings(dup)), /name is already used by shot 1[\s\S]*is shot 1's too/);
    assert.throws(() => compile(JOB, settings({ shots: [] })), /no shots/);
    assert.throws(() => compile(JOB, { shot_list: LIST, cli_path: "c", shots_json: "{" }), /could not be read/);
});

test("JOB_TYPE: the settings Flamenco's add-on shows and evaluates", () => {
    const { jobType } = compile(JOB, settings({ shots: [{ blend: "a.blend", output: "b.blend", armature: "R" }] }));
    const keys = jobType.settings.map((s) => s.key);
    assert.deepEqual(keys, ["shot_list", "cli_path", "max_error", "shots_json"]);
    for (const s of jobType.settings) assert.ok(["string", "float", "int32", "bool"].includes(s.type), s.key);
    const hidden = jobType.settings.find((s) => s.key === "shots_json");
    assert.equal(hidden.visible, "hidden");
    assert.match(hidden.eval, /tomllib/);
});

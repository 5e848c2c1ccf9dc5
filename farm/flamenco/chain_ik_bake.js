// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco job type "Chain IK Bake": one Blender task per shot of a Chain IK shot list
// (the TOML file tools/bake_shots.py reads; format: docs/shot_list.md).
// Install: copy this file into the `scripts` folder next to flamenco-manager, restart it.
//
// A job compiler can read no file, and the rules of a shot list (paths resolved, links
// followed, no output over any input, the libraries each shot's blend links included) need the
// files and Blender. So the submitting Blender checks the list with the extension's own
// headless/shot_list.py, the one check every route applies: the hidden `shots_json` setting,
// evaluated by the Flamenco add-on at submission (headless/flamenco_submission.py), holds the
// checked shots (each with its whole cli.py argument list) or the problems. This script holds no rule
// of its own: it refuses a job whose list has problems or was not checked, and authors one
// task per checked shot: `{blender} {blenderArgs} shot.blend --python cli.py -- ...`.

const CHECKED_BY = "chain_ik shot_list 1"; // flamenco_submission.CHECKED_BY: the document's format

// Python, evaluated in the submitting Blender (as an expression: names used inside a
// comprehension must be builtins, so the settings are passed to the lambda).
const CHECK_EVAL =
    "(lambda found, path, bound: __import__('importlib').import_module(found[0] + '.headless.flamenco_submission')" +
    ".submission(path, bound) if found else __import__('json').dumps({'checked_by': '" + CHECKED_BY + "', " +
    "'shot_list': str(path), 'problems': ['Chain IK is not enabled in this Blender: enable it (Preferences > " +
    "Add-ons) so the shot list can be checked']}))(" +
    "[n for n in list(__import__('sys').modules) if n == 'chain_ik' or (n.startswith('bl_ext.') and " +
    "n.endswith('.chain_ik'))], abspath(settings.shot_list), settings.max_error)";

const JOB_TYPE = {
    label: "Chain IK Bake",
    description: "Bake Chain IK chains to keys, one Blender task per shot of a shot list",
    settings: [
        { key: "shot_list", type: "string", subtype: "file_path", required: true, visible: "submission",
          description: "The shot list (.toml), on storage the workers share" },
        { key: "cli_path", type: "string", subtype: "file_path", required: true, visible: "submission",
          // The installed extension's cli.py (extensions load as bl_ext.<repository>.chain_ik).
          eval: "next((__import__('os').path.join(__import__('os').path.dirname(m.__file__), 'cli.py') " +
                "for n, m in list(__import__('sys').modules.items()) " +
                "if n.startswith('bl_ext.') and n.endswith('.chain_ik')), '')",
          description: "cli.py of the Chain IK extension, as the workers see it" },
        { key: "max_error", type: "float", default: 0.0, visible: "submission",
          description: "Fail a shot whose playback misses by more (0: no bound; a shot's own max_error wins)" },
        { key: "shots_json", type: "string", required: true, visible: "hidden", eval: CHECK_EVAL,
          description: "The shot list as checked by Chain IK at submission (shots, or problems)" },
    ],
};

function compileJob(job) {
    const settings = job.settings;
    const shots = checkedShots(settings);
    for (const shot of shots) {
        const task = author.Task(`bake-${shot.name}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: shot.blend,
            // --python-exit-code: a Python error fails the task (Blender would exit 0).
            args: ["--python-exit-code", "1", "--python", settings.cli_path, "--"].concat(shot.arguments),
        }));
        job.addTask(task);
    }
    print(`Chain IK Bake: ${shots.length} shot(s) from ${settings.shot_list}`);
}

// The shots flamenco_submission.submission() checked; throws its problems, or says the list was not checked.
function checkedShots(settings) {
    let doc;
    try {
        doc = JSON.parse(settings.shots_json);
    } catch (e) {
        throw `Chain IK Bake: the checked shot list could not be read (${e})`;
    }
    if (doc === null || typeof doc !== "object" || doc.checked_by !== CHECKED_BY) {
        throw "Chain IK Bake: the shot list was not checked by Chain IK (Shots Json is not the extension's submission() " +
              "output): refresh the job types in Blender's Flamenco add-on and submit again";
    }
    if (Array.isArray(doc.problems) && doc.problems.length) {
        throw `Chain IK Bake: ${doc.shot_list}: ${doc.problems.length} problem(s):\n` + doc.problems.join("\n");
    }
    if (!Array.isArray(doc.shots) || !doc.shots.length) throw "Chain IK Bake: no shots";
    return doc.shots;
}

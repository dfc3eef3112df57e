// actions/cache/save@v4 stand-in: the save step of ../save.js (no restore ran, so always saves).
require("../save.js");

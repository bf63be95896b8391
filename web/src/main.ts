// boardd's dashboard: the page shell. It mounts the views; each view owns its own state,
// data and stream (web/src/views/).

import "./style.css";

import { ScalarsView } from "./views/scalars";

const root = document.createElement("div");
root.id = "app";
document.body.append(root);
new ScalarsView().mount(root);

// The strategy editor's conveniences (features/templates/admin/features/featurestrategy/):
// only the parameters of the chosen strategy type shown, only the value box the operator takes,
// a slider beside the rollout, and rows added to the constraints and variants. The page works
// without them.
"use strict";
(function () {
  const settings = JSON.parse(document.getElementById("strategy-editor-settings").textContent);
  const typed = new Set(Object.values(settings.typeParameters).flat());
  const oneValue = new Set(settings.oneValueOperators);

  function showParametersOf(type) {
    const shown = new Set(settings.typeParameters[type] || []);
    for (const field of typed) {
      const row = document.querySelector(".form-row.field-" + field);
      if (row) row.classList.toggle("hidden-by-type", !shown.has(field));
    }
  }

  function showValueBoxOf(row) {
    const operator = row.querySelector("select[name$='-operator']");
    if (!operator) return;
    const single = oneValue.has(operator.value);
    for (const [cell, hidden] of [["values", single], ["value", !single]]) {
      row.querySelectorAll("td.field-" + cell + " > *").forEach((element) => {
        element.classList.toggle("hidden-by-operator", hidden);
      });
    }
  }

  function addSlider() {
    const rollout = document.getElementById("id_rollout");
    if (!rollout) return;
    const slider = document.createElement("input");
    slider.type = "range";
    slider.min = "0";
    slider.max = "100";
    slider.step = "1";
    slider.id = "rollout-slider";
    slider.setAttribute("aria-label", "Rollout (%)");
    slider.value = rollout.value || "0";
    slider.addEventListener("input", () => { rollout.value = slider.value; });
    rollout.addEventListener("input", () => { slider.value = rollout.value || "0"; });
    rollout.insertAdjacentElement("afterend", slider);
  }

  function addRow(group) {
    const prefix = group.dataset.prefix;
    const total = document.getElementById("id_" + prefix + "-TOTAL_FORMS");
    const template = group.querySelector("template.editor-empty-row");
    const html = template.innerHTML.replace(/__prefix__/g, total.value);
    template.insertAdjacentHTML("beforebegin", html);
    total.value = String(Number(total.value) + 1);
    const rows = group.querySelectorAll("tbody > tr.editor-row");
    showValueBoxOf(rows[rows.length - 1]);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const type = document.getElementById("id_name");
    if (type) {
      showParametersOf(type.value);
      type.addEventListener("change", () => showParametersOf(type.value));
    }
    addSlider();
    document.querySelectorAll(".strategy-editor-rows tr.editor-row").forEach(showValueBoxOf);
    document.addEventListener("change", (event) => {
      if (event.target.matches("select[name$='-operator']")) {
        showValueBoxOf(event.target.closest("tr"));
      }
    });
    document.querySelectorAll(".strategy-editor-rows").forEach((group) => {
      group.querySelector(".editor-add-row").addEventListener("click", () => addRow(group));
    });
  });
})();
